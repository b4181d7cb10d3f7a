"""Fixtures of the post-deploy check. Without DOCCHAT_E2E_STACK (which `python -m tests.e2e`
sets) every test here skips before any AWS call, and the loopback guard stays on."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.e2e.check import STACK_ENV, Stack, StackError, stack_from_description

# Taken at import, before any test's guard replaces it.
_REAL_CONNECT = socket.socket.connect


@pytest.fixture(autouse=True)
def _loopback_only(_loopback_only: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The root guard, lifted only for a run against a named stack."""
    if os.environ.get(STACK_ENV):
        monkeypatch.setattr(socket.socket, "connect", _REAL_CONNECT)


@pytest.fixture(scope="session")
def stack_name() -> str:
    name = os.environ.get(STACK_ENV, "")
    if not name:
        pytest.skip("needs a deployed stack: make e2e STACK=<name>, with AWS credentials")
    return name


@pytest.fixture(scope="session")
def session(stack_name: str) -> Any:
    from tests.e2e.live import caller_session

    return caller_session()


@pytest.fixture(scope="session")
def stack(stack_name: str, session: Any) -> Stack:
    from botocore.exceptions import ClientError

    try:
        description = session.client("cloudformation").describe_stacks(StackName=stack_name)
    except ClientError as exc:
        if "does not exist" in str(exc):
            raise StackError(
                f"no stack {stack_name!r} in {session.region_name}: check STACK and AWS_REGION"
            ) from exc
        raise
    return stack_from_description(stack_name, description)


@pytest.fixture(scope="session")
def run_id() -> str:
    """Names what this run creates, so that runs never share a key or a user."""
    return f"{datetime.now(UTC):%Y%m%dt%H%M%S}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def api(stack: Stack, session: Any, run_id: str) -> Iterator[Any]:
    """The chat API with the credentials the stack's ApiAuth asks for."""
    from tests.e2e.live import Auth, ChatApi, SigV4, TokenAuth, cognito_user

    if stack.auth == "COGNITO":
        with cognito_user(session, stack, run_id) as sign_in:
            yield ChatApi(stack, TokenAuth(sign_in))
    elif stack.auth == "IAM":
        yield ChatApi(stack, SigV4(session))
    else:
        yield ChatApi(stack, Auth())
