"""`python -m docchat.cli`: the `docchat` command."""

import sys

from docchat.cli import command

if __name__ == "__main__":  # importing it (pkgutil.walk_packages does) runs nothing
    sys.exit(command())
