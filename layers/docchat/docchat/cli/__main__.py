"""`python -m docchat.cli`: the `docchat` command."""

import sys

from docchat.cli import main

sys.exit(main())
