"""`make e2e`: say in one line what the post-deploy check needs, or run it against the stack.

    python -m tests.e2e <stack name> [pytest arguments]

Exits 0 after the one line when no stack is named or no AWS credentials or region are found, so
that a CI run without an AWS account stays green; otherwise exits with pytest's status.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.e2e.check import STACK_ENV, missing_prerequisites


def _caller() -> tuple[bool, str | None, str]:
    """Whether the standard chain (environment, profiles, SSO, container, instance) yields
    credentials, the region, and why not if resolving them failed."""
    import botocore.exceptions

    from tests.e2e.live import caller_session

    try:
        session = caller_session()
        return session.get_credentials() is not None, session.region_name, ""
    except botocore.exceptions.BotoCoreError as exc:  # e.g. AWS_PROFILE names no profile
        return False, os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"), str(exc)


def main(argv: list[str]) -> int:
    stack, extra = (argv[0].strip(), argv[1:]) if argv else ("", [])
    credentials, region, detail = _caller() if stack else (False, None, "")
    line = missing_prerequisites(stack=stack, credentials=credentials, region=region, detail=detail)
    if line is not None:
        print(line)
        return 0
    import pytest

    os.environ[STACK_ENV] = stack
    here = Path(__file__).resolve().parent
    # Live logs show progress through the minutes an ingestion takes.
    options = ["-o", "log_cli=true", "--log-cli-level=INFO", "-p", "no:cacheprovider"]
    return int(pytest.main([str(here), *options, *extra]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
