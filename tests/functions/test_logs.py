"""Logs carry ids and counts, never document text or prompts, at INFO and above."""

from __future__ import annotations

import logging

import pytest

from tests.functions.conftest import Pipeline
from tests.pdfgen import make_pdf

MARKER = "Zanzibar quartermaster ledger"


def test_pipeline_logs_never_contain_document_text(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    from docchat.wiring.lambda_handler import logger

    caplog.set_level(logging.INFO)
    level = logger.log_level
    logger.setLevel(logging.INFO)
    pdf = make_pdf([[("h1", f"{MARKER} heading"), ("body", f"The {MARKER} lists every crate.")]])
    try:
        execution = pipeline.upload("secret-ledger.pdf", pdf)
    finally:
        logger.setLevel(level)

    assert execution["status"] == "SUCCEEDED"
    out = capsys.readouterr()
    logged = out.out + out.err + "\n".join(r.getMessage() for r in caplog.records)
    assert '"step done"' in out.out or "step done" in logged  # the handlers did log
    assert MARKER.casefold() not in logged.casefold()
