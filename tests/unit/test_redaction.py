"""Secrets kept out of log records (docchat.adapters.redaction): any logger, message, args or
exception, in each spelling a log may give them."""

from __future__ import annotations

import json
import logging

import pytest

from docchat.adapters.redaction import WITHHELD, hide, install

SECRET = 'FAKE-unit-secret-"with"\\escapes-0002'


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    shown = logging.Formatter("%(name)s %(message)s")
    return "\n".join(shown.format(r) for r in caplog.records)


def test_a_hidden_secret_is_starred_in_every_spelling_and_in_exceptions(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hide(SECRET)
    caplog.set_level(logging.DEBUG)
    escaped = json.dumps(SECRET)[1:-1]
    body = json.dumps({"token": SECRET}).encode()

    logging.getLogger("urllib3.connectionpool").debug("sent %s", SECRET)
    logging.getLogger("somebody.else").debug("body %r", body)
    try:
        raise ValueError(f"refused {SECRET}")
    except ValueError:
        logging.getLogger("docchat.x").exception("failed")

    logged = _logged(caplog)
    assert "sent ***" in logged and "failed" in logged and "ValueError: refused ***" in logged
    for spelled in (SECRET, escaped, repr(escaped.encode())[2:-1]):
        assert spelled not in logged


def test_a_secrets_manager_answer_is_withheld_whole(caplog: pytest.LogCaptureFixture) -> None:
    install()  # as the adapter does before its first GetSecretValue: no secret known yet
    caplog.set_level(logging.DEBUG)
    answer = json.dumps({"Name": "docchat/x", "SecretString": "FAKE-not-read-yet-0004"}).encode()

    logging.getLogger("botocore.parsers").debug("Response body:\n%r", answer)

    assert [r.getMessage() for r in caplog.records] == [WITHHELD]
