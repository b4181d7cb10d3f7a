"""A conversion's child does not inherit the caller's threads' locks: `docchat serve` converts
while other threads run, and a lock held by one of them at fork time would stay held forever in a
forked child (until the conversion's time cap)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from docchat.ingest import isolate
from docchat.ingest.convert.pdf import ConvertLimits, pages_from_pdf
from docchat.ingest.isolate import pages_from_pdf_isolated
from docchat.models import ConvertedDocument
from tests.pdfgen import make_pdf

REPORT = make_pdf([[("h1", "Part 1"), ("body", "Revenue grew.")]])
# Stands for any lock the child needs that a parent's thread may hold: a logging handler's, an
# import lock, a library's module-level cache lock.
_SHARED = threading.Lock()


def _convert_under_lock(data: bytes, **kwargs: object) -> ConvertedDocument:
    with _SHARED:
        return pages_from_pdf(data, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def busy_thread() -> Iterator[None]:
    """A thread that holds `_SHARED` while the conversion starts, as a server thread might."""
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with _SHARED:
            held.set()
            done.wait(30)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    held.wait(5)
    yield
    done.set()
    thread.join(5)


def test_child_does_not_inherit_a_lock_held_by_another_thread(
    monkeypatch: pytest.MonkeyPatch, busy_thread: None
) -> None:
    monkeypatch.setattr(isolate, "pages_from_pdf", _convert_under_lock)
    monkeypatch.setattr(isolate, "GRACE_S", 0.0)
    started = time.monotonic()

    document = pages_from_pdf_isolated(REPORT, limits=ConvertLimits(timeout_s=15))

    assert "Revenue grew." in document.pages[0].markdown
    assert time.monotonic() - started < 10


def test_lambda_forks_and_everything_else_uses_the_forkserver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # In Lambda a child that re-ran the bootstrap script would take the next invocation
    # (tests/lambda_layout/test_rie.py converts under the runtime interface emulator).
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    assert isolate._context().get_start_method() == "forkserver"

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "ConvertFunction")
    assert isolate._context().get_start_method() == "fork"
