"""`sam build` of the whole stack and `sam local invoke` of every function with its sample event,
in containers from the stand-in for the Lambda Python 3.13 image (infra/sam_local), against moto
and the Bedrock and OpenSearch stand-ins, as tests/lambda_layout/test_rie.py checks the same
events without Docker. Here the task root is the read-only /var/task of a container with the
function's memory size, only /tmp writable and its environment from the template, as on Lambda.

Not run: the Lambda Web Adapter (its layer is an ARN that cannot be downloaded here), so the
chat function's run.sh is started in the image `sam local` built with the function's layers and
its readiness path answered from inside the container (check_chat_...).

Deliberate breaks, tried by hand on 2026-12-02 in a copy of the checkout, each fail this test:
- RegisterFunction's Handler `app.handlr` in template.yaml: Register's invoke answers
  Runtime.HandlerNotFound ("Handler 'handlr' missing on module 'app'"); Convert, Chunk,
  Finalize, Watchdog and the state machine's checks fail after it (nothing is indexed).
- mammoth removed from functions/convert/requirements.txt: the sample events still pass (a PDF
  needs no Office reader) but the state machine's .docx fails in Convert: "'plan.docx' could not
  be read (ModuleNotFoundError: No module named 'mammoth'): open it in its application, save it
  again and upload that" (a CorruptFileError: the missing module is worded as a damaged file)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import EXAMPLES, REPO

pytestmark = pytest.mark.slow

DOC_ID = "dmca-75433a68"
VERSION = "931f4374c255bcf28690c0567ba7be8e53513bce682e3db8086a831b92fcdfb6"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:docchat-ingest:example-run"
BATCH_KEY = f"artifacts/{DOC_ID}/{VERSION}/chunks/00000.json"
# The bucket and key the sample events name (tests/lambda_layout/conftest.py puts the PDF there).
DOC = {
    "doc_id": DOC_ID, "version": VERSION, "bucket": "docchat-documents-example",
    "key": "reports/dmca.pdf", "execution_id": EXECUTION, "source_url": "",
}  # fmt: skip


def _event(name: str) -> Any:
    return json.loads((REPO / "events" / f"{name}.json").read_text())


def _ok(run: dict[str, Any], name: str) -> Any:
    """The function's answer; a failed invocation fails the test with SAM's and its log."""
    step = run["steps"][name]
    result = step["result"]
    if (
        step["returncode"] != 0
        or result is None
        or (isinstance(result, dict) and "errorType" in result)
    ):
        raise AssertionError(
            f"sam local invoke {step['function']} -e events/{name}.json failed "
            f"(exit {step['returncode']}): {json.dumps(result, indent=2)}\n"
            f"--- sam and function log ---\n{step['log']}"
        )
    return result


def _item(run: dict[str, Any], name: str, **expected: Any) -> None:
    item = run["steps"][name]["item_after"]
    assert item is not None, f"{name}: the document vanished from the registry"
    assert {k: item.get(k) for k in expected} == expected, f"{name}: {item}"


def check_every_function_is_invoked_with_its_sample_event(
    sam_run: dict[str, Any],
) -> None:
    handlers = {p.parent.name for p in (REPO / "functions").glob("*/app.py")}
    events = {p.stem for p in (REPO / "events").glob("*.json")}
    assert handlers == events == set(sam_run["steps"])
    # and the build holds every function of the template, the OCR image and chat included
    assert set(sam_run["functions"]) == handlers | {"chat"}


def check_register_claims_the_uploaded_pdf(sam_run: dict[str, Any]) -> None:
    assert _ok(sam_run, "register") == {"action": "process", "reason": "", "doc": DOC}
    _item(sam_run, "register", status="QUEUED", execution_id=EXECUTION)


def check_convert_stores_the_pages(sam_run: dict[str, Any]) -> None:
    sample = _event("chunk")  # what the state machine hands Chunk is what Convert returned
    assert _ok(sam_run, "convert") == {
        "doc": DOC,
        "title": sample["title"],
        "pages": sample["pages"],
        "pages_key": f"pages/{DOC_ID}/{VERSION}.json",
        "ocr_ranges": [],
    }
    _item(sam_run, "convert", status="CHUNKING", pages=sample["pages"])


def check_ocr_image_reads_the_page_as_ocr_here_does(sam_run: dict[str, Any]) -> None:
    from docchat.ingest.convert.pageocr import ocr_pages
    from docchat.ingest.ocr import OcrOptions

    event = _event("ocr")
    result = _ok(sam_run, "ocr")
    expected = ocr_pages((EXAMPLES / "dmca.pdf").read_bytes(), [1], options=OcrOptions(dpi=150))
    assert result == {
        "doc": event["doc"], "key": event["range"]["key"], "pages": 1,
        "lines": len(expected[0].lines),
    }  # fmt: skip
    [page] = sam_run["steps"]["ocr"]["artifact"]
    assert [line["text"] for line in page["lines"]] == [line.text for line in expected[0].lines]


def check_chunk_embed_and_index_handle_the_batch(sam_run: dict[str, Any]) -> None:
    chunked = _ok(sam_run, "chunk")
    assert (chunked["doc"], chunked["batches"]) == (DOC, [BATCH_KEY])
    assert chunked["chunks"] == _event("finalize")["chunks"]
    expected = {"doc": DOC, "batch_key": BATCH_KEY, "chunks": chunked["chunks"]}
    assert _ok(sam_run, "embed") == expected
    assert _ok(sam_run, "index") == expected
    assert sam_run["bulk_requests"] >= 2  # Index wrote, Remove deleted
    assert set(sam_run["index_docs_after"].values()) == {0}  # Remove left no chunk behind


def check_finalize_marks_the_document_indexed(sam_run: dict[str, Any]) -> None:
    result = _ok(sam_run, "finalize")
    assert (result["doc_id"], result["status"]) == (DOC_ID, "INDEXED")
    _item(sam_run, "finalize", status="INDEXED", chunks=_event("finalize")["chunks"])


def check_mark_failed_and_watchdog_leave_an_indexed_document_alone(
    sam_run: dict[str, Any],
) -> None:
    unchanged = {"doc_id": DOC_ID, "status": "unchanged", "detail": "another run owns it"}
    assert _ok(sam_run, "mark_failed") == unchanged
    assert _ok(sam_run, "watchdog") == unchanged
    _item(sam_run, "watchdog", status="INDEXED")


def check_remove_forgets_the_deleted_pdf(sam_run: dict[str, Any]) -> None:
    assert _ok(sam_run, "remove") == {"doc_id": DOC_ID, "status": "removed", "detail": ""}
    assert sam_run["steps"]["remove"]["item_after"] is None


def check_sync_writes_the_defined_sites_page_into_its_collection(
    sam_run: dict[str, Any],
) -> None:
    # The scheduler's event syncs the web source defined in the artifacts bucket (a site on
    # loopback, relayed to the container): its one page is an object under the collection's
    # prefix with its address in the metadata; the run's lease is released
    result = _ok(sam_run, "sync")
    [synced] = result["sources"]
    assert (synced["name"], synced["fetched"], synced["failed"]) == ("handbook", 1, 0), result
    assert (result["removed_sources"], result["left_to_another"]) == ([], "")
    step = sam_run["steps"]["sync"]
    [(key, metadata)] = step["objects"].items()
    assert key.startswith("collections/harbour/sources/handbook/") and key.endswith("/index.html")
    assert metadata == {"docchat-source-url": step["site"]}
    assert step["states"] == ["sources/state/handbook.json"]


def check_chat_run_sh_gets_ready_without_the_web_adapter(
    sam_run: dict[str, Any],
) -> None:
    # The Lambda Web Adapter's layer (LambdaAdapterLayerArm64) cannot be had here: run.sh, the
    # adapter's handler script, is run in the image with the chat function's layers at /opt,
    # and its readiness path (AWS_LWA_READINESS_CHECK_PATH) must answer below 500.
    chat = sam_run["chat"]
    assert chat.get("returncode") == 0, chat
    status = int(chat["output"].split()[0])
    assert 100 <= status < 500, chat["output"]


def check_state_machine_indexes_a_pdf_a_scan_and_a_docx_and_removes_a_deletion(
    sam_run: dict[str, Any],
) -> None:
    # Given the state machine run by moto with its Task states sent to `sam local start-lambda`
    ingestion = sam_run["ingestion"]
    runs, registry, keys = ingestion["runs"], ingestion["registry"], ingestion["keys"]
    pdf, scan, docx = keys
    failed = {
        key: run for key, run in runs.items()
        if run["status"] != "SUCCEEDED" or run["errors_as_results"]
    }  # fmt: skip
    assert not failed, json.dumps(failed, indent=2)
    # Then the scan went through the OCR map, and the .docx through Convert like a PDF
    assert "OcrPages" in runs[scan]["states"], runs[scan]["states"]
    by_key = dict(zip(keys, registry.values(), strict=True))
    for key in (scan, docx):
        item = by_key[key]
        assert item is not None and item["status"] == "INDEXED", (key, item)
        assert item["chunks"] > 0, (key, item)
        assert ingestion["chunks_in_opensearch"][item["doc_id"]] == item["chunks"], key
    assert by_key[scan]["pages_ocr"] == 1
    # And the deleted PDF was indexed, then forgotten with its chunks
    assert "Register" in runs[pdf]["states"]
    assert by_key[pdf] is None
    pdf_id = next(doc_id for doc_id, item in registry.items() if item is None)
    assert ingestion["chunks_in_opensearch"][pdf_id] == 0


CHECKS = [value for name, value in sorted(globals().items()) if name.startswith("check_")]


def test_sam_local_build_invoke_and_ingest(sam_run: dict[str, Any]) -> None:
    """Every check above against the one pass (one test, so that under xdist a single worker
    runs the pass and the other keeps running the rest of the suite); each failure is named."""
    failures = []
    for check in CHECKS:
        try:
            check(sam_run)
        except Exception as exc:  # each check's failure is reported, whatever its kind
            failures.append(f"{check.__name__}: {type(exc).__name__}: {exc}")
    timings = ", ".join(f"{k} {v:.0f} s" for k, v in sam_run["timings"].items())
    print(f"\nsam local pass ({sam_run['work']}): {timings}")
    assert not failures, "\n\n".join(failures)
