"""Cloud OCR through the real state machine: Convert (no OCR engine) hands the pages without a
text layer to the OCR map, then builds the document's pages with their lines; text-only PDFs
never enter the map."""

from __future__ import annotations

import io
import json

import pypdfium2 as pdfium
import pytest
import yaml
from reportlab.pdfgen.canvas import Canvas

from docchat.errors import PdfTooLargeError
from docchat.ingest.artifacts import pages_key
from docchat.ingest.convert.pageocr import LocalOcr
from docchat.ingest.convert.pdf import pages_from_pdf
from docchat.ingest.decision import doc_id_for
from docchat.ingest.ocr import OcrOptions
from docchat.models import DocStatus, Page
from tests.conftest import REPO
from tests.functions.conftest import ARTIFACTS_BUCKET, DOCS_BUCKET, Pipeline
from tests.infra.test_statemachine import CloudFormationLoader
from tests.pdfgen import make_pdf, scanned_copy

OCR_STATES = {"NeedsOcr", "OcrPages", "Ocr", "ConvertWithOcr"}


def _doc_id(key: str) -> str:
    return doc_id_for(f"{DOCS_BUCKET}/{key}")


def _stored_pages(pipeline: Pipeline, doc_id: str, version: str) -> list[Page]:
    body = pipeline.s3.get_object(Bucket=ARTIFACTS_BUCKET, Key=pages_key(doc_id, version))
    return [Page.model_validate(p) for p in json.loads(body["Body"].read())["pages"]]


def test_cloud_ocr_is_what_the_stack_sets_on_convert() -> None:
    # The premise of these tests (conftest sets DOCCHAT_OCR=cloud): the stack's Convert has no
    # OCR engine and hands scans to the OCR step.
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=CloudFormationLoader)
    convert = template["Resources"]["ConvertFunction"]["Properties"]
    assert convert["Environment"]["Variables"]["DOCCHAT_OCR"] == "cloud"


def _mixed() -> bytes:
    """Five pages: scans (image only) on pages 1, 3 and 5, a text layer on 2 and 4."""
    typed = make_pdf([[("h1", "Locks"), ("body", "Boats rise in the lock chamber.")]])
    parts = [
        _small_scan("The kitchen opens at six."),
        typed,
        _small_scan("Invoice number 4711 is paid."),
        typed,
        _small_scan("The ferry leaves at noon."),
    ]
    merged = pdfium.PdfDocument.new()
    for part in parts:
        merged.import_pages(pdfium.PdfDocument(part))
    buffer = io.BytesIO()
    merged.save(buffer)
    return buffer.getvalue()


def test_cloud_ocr_mixed_pdf_is_indexed_with_its_scanned_pages(pipeline: Pipeline) -> None:
    data = _mixed()

    execution = pipeline.upload("scans/mixed.pdf", data, timeout=900)

    # Then the run went Convert -> OCR map (3 pages, 2 an item) -> Convert again -> ... INDEXED
    assert execution["status"] == "SUCCEEDED", execution
    entered = pipeline.states_entered(execution)
    assert entered.index("Convert") < entered.index("OcrPages") < entered.index("ConvertWithOcr")
    assert entered.index("ConvertWithOcr") < entered.index("Chunk") < entered.index("Finalize")
    assert pipeline.calls["ocr"] == 2
    assert pipeline.calls["convert"] == 2
    record = pipeline.services.registry.get(_doc_id("scans/mixed.pdf"))
    assert record is not None
    assert (record.status, record.pages, record.pages_ocr) == (DocStatus.INDEXED, 5, 3)

    # And the stored pages are exactly what a local conversion (OCR in process) makes
    local = pages_from_pdf(data, fallback_title="mixed", ocr=LocalOcr(OcrOptions(dpi=150)))
    assert _stored_pages(pipeline, record.doc_id, record.version) == local.pages
    assert record.title == local.title

    # And the OCR'd text is searchable, cited on its page
    chunks = pipeline.services.index.document_chunks(record.doc_id)
    for word, page in (("kitchen", 1), ("4711", 3), ("ferry", 5)):
        [found] = [c for c in chunks if word in c.text.casefold()]
        assert found.page_at(found.text.casefold().index(word)) == page, word
    assert len(chunks) == record.chunks


def test_cloud_ocr_text_only_pdf_skips_the_map(pipeline: Pipeline) -> None:
    pdf = make_pdf([[("h1", "Locks"), ("body", "Boats rise in the lock chamber.")]] * 3)

    execution = pipeline.upload("typed.pdf", pdf)

    assert execution["status"] == "SUCCEEDED", execution
    entered = pipeline.states_entered(execution)
    assert "NeedsOcr" in entered and not OCR_STATES.intersection(
        entered[entered.index("NeedsOcr") + 1 :]
    )
    assert (pipeline.calls["ocr"], pipeline.calls["convert"]) == (0, 1)
    record = pipeline.services.registry.get(_doc_id("typed.pdf"))
    assert record is not None and (record.status, record.pages_ocr) == (DocStatus.INDEXED, 0)


def _small_scan(*lines: str) -> bytes:
    """One small page that is only an image of `lines` (quick to OCR)."""
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=(360, 160), invariant=1)
    canvas.setFont("Helvetica", 18)
    for n, line in enumerate(lines):
        canvas.drawString(24, 120 - 25 * n, line)
    canvas.showPage()
    canvas.save()
    return scanned_copy(buffer.getvalue())


def test_cloud_ocr_lambda_service_error_is_retried(pipeline: Pipeline) -> None:
    pipeline.kills["ocr"] = 1  # the first OCR sandbox dies after writing its results

    execution = pipeline.upload("retried.pdf", _small_scan("Invoice number 4711"), timeout=600)

    assert execution["status"] == "SUCCEEDED", execution
    assert pipeline.calls["ocr"] == 2
    record = pipeline.services.registry.get(_doc_id("retried.pdf"))
    assert record is not None and (record.status, record.pages_ocr) == (DocStatus.INDEXED, 1)
    [chunk] = pipeline.services.index.document_chunks(record.doc_id)
    assert "Invoice number 4711" in chunk.text


def test_cloud_ocr_failure_marks_the_document_failed_with_its_reason(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an OCR step that hits its memory cap (a hostile scan)
    def too_large(*_: object, **__: object) -> None:
        raise PdfTooLargeError(
            "converting the PDF needs more than 2048 MiB of memory: split the document"
        )

    monkeypatch.setattr("docchat.ingest.steps.ocr_pages_isolated", too_large)

    execution = pipeline.upload("huge.pdf", _small_scan("Invoice number 4711"))

    # Then the run fails through MarkFailed, and the document says why
    assert execution["status"] == "FAILED"
    assert "MarkFailed" in pipeline.states_entered(execution)
    record = pipeline.services.registry.get(_doc_id("huge.pdf"))
    assert record is not None and record.status == DocStatus.FAILED
    assert (record.error_code, record.error) == (
        PdfTooLargeError.code,
        "converting the PDF needs more than 2048 MiB of memory: split the document",
    )


def test_convert_is_told_which_call_it_is_and_refuses_a_payload_of_neither_shape(
    pipeline: Pipeline,
) -> None:
    # The state machine wraps Convert's second call as {"after_ocr": first result}; a first
    # result handed over bare (what Convert once guessed from a "doc" key) is neither call.
    from pydantic import ValidationError

    from tests.functions.conftest import _load_handler

    convert = _load_handler("convert")
    doc = {"doc_id": "d-1", "version": "v1", "bucket": DOCS_BUCKET, "key": "a.pdf"}
    bare = {"doc": doc, "title": "a", "pages": 0, "ocr_ranges": [{"pages": [1], "key": "k"}]}
    with pytest.raises(ValidationError) as refused:
        convert._run(bare)
    assert {"doc_id", "after_ocr"} <= {str(e["loc"][-1]) for e in refused.value.errors()}
