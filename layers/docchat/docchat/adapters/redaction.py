"""Secrets kept out of every log record the process makes, docchat's, botocore's, urllib3's or
anyone's, at any level: at DEBUG botocore logs the body of each answer AWS gives, and
GetSecretValue's body holds the secret (`botocore.parsers`, "Response body"). A record factory
(logging.setLogRecordFactory, installed once) withholds the message of any record that holds a
Secrets Manager answer, and puts "***" for each secret read so far, as Python, JSON or a bytes
repr would spell it."""

from __future__ import annotations

import json
import logging
import threading
import traceback
from typing import Any

#: The fields of a Secrets Manager answer that hold a secret (GetSecretValue and
#: BatchGetSecretValue): a record that names one is withheld whole.
_ANSWER_FIELDS = ('"SecretString"', '"SecretBinary"')
WITHHELD = "[withheld: it held a Secrets Manager secret]"
_lock = threading.Lock()
#: Every spelling of every secret read, longest first (replaced whole, never changed in place).
_hidden: tuple[str, ...] = ()
_installed: list[bool] = []


def hide(secret: str) -> None:
    """Keep `secret` out of every log record from now on (and the factory installed)."""
    global _hidden
    with _lock:
        _hidden = tuple(sorted(set(_hidden) | _spellings(secret), key=len, reverse=True))
    install()


def install() -> None:
    """Put the redacting factory in front of the current record factory, once."""
    with _lock:
        if _installed:
            return
        _installed.append(True)
        made = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = made(*args, **kwargs)
            _redact(record)
            return record

        logging.setLogRecordFactory(factory)


def redacted(text: str) -> str:
    """`text` with every secret read so far as "***", or WITHHELD if it holds an answer."""
    if any(field in text for field in _ANSWER_FIELDS):
        return WITHHELD
    for secret in _hidden:
        text = text.replace(secret, "***")
    return text


def _redact(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a record whose args do not fit: logging itself reports it later
        message = f"{record.msg!r} {record.args!r}"
    shown = redacted(message)
    if shown != message:
        record.msg, record.args = shown, ()
    if record.exc_info and record.exc_info[1] is not None:
        text = "".join(traceback.format_exception(*record.exc_info))
        if redacted(text) != text:
            record.exc_info, record.exc_text = None, redacted(text)


def _spellings(secret: str) -> set[str]:
    """`secret` as logs may spell it: itself, JSON-escaped (ASCII or not), and each of those
    inside a repr of bytes (botocore logs bodies with %r)."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    for form in list(forms):
        data = form.encode()
        forms.add(repr(data)[2:-1])
        forms.add(repr(data + b"'\"")[2:-4])  # the quoting a body with both quotes gets
    return {form for form in forms if form}
