"""Every Lambda in functions/ runs from the `sam build` output, in the Lambda layout (layers at
/opt/python in a private mount namespace, the build's function folder as the task root, Lambda's
environment and the runtime's sys.path, no PYTHONPATH), under the Lambda runtime interface
emulator: what `sam local invoke <Function> -e events/<name>.json` would do, without Docker.

The environment is the template's for each function, resolved for this stack; the AWS services
are moto in server mode on loopback (AWS_ENDPOINT_URL) and, for Titan embeddings, the loopback
Bedrock stub. The sample events are invoked in pipeline order against one document,
examples/pdfs/dmca.pdf. tests/lambda_layout/harness.py says what is emulated and from which page.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer

from tests.cli.website import Page, Site, page, serving
from tests.conftest import EXAMPLES, REPO
from tests.lambda_layout.bedrock_stub import BedrockStub
from tests.lambda_layout.conftest import DOCS_BUCKET, PDF_KEY, Stack, make_stack
from tests.lambda_layout.harness import Emulator, Invocation, Layout, moto_client
from tests.lambda_layout.opensearch_stub import OpenSearchStub

DOC_ID = "dmca-75433a68"
VERSION = "931f4374c255bcf28690c0567ba7be8e53513bce682e3db8086a831b92fcdfb6"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:docchat-ingest:example-run"
BATCH_KEY = f"artifacts/{DOC_ID}/{VERSION}/chunks/00000.json"
PIPELINE_ORDER = (
    "register",
    "convert",
    "chunk",
    "embed",
    "index",
    "finalize",
    "mark_failed",
    "watchdog",
    "remove",
    "sync",
)
#: The site the sync function's sample event syncs (a web source defined before it runs).
SITE = Site(pages={"/": Page(page("Harbour handbook", "Moor at pontoon seven."))})


def _event(name: str) -> Any:
    return json.loads((REPO / "events" / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def stack(
    moto_endpoint: str,
    bedrock: BedrockStub,
    opensearch: OpenSearchStub,
    tmp_path_factory: pytest.TempPathFactory,
) -> Stack:
    tmp = tmp_path_factory.mktemp("rie")
    return make_stack(
        "rie",
        tmp,
        moto_endpoint=moto_endpoint,
        bedrock_endpoint=bedrock.endpoint,
        opensearch_endpoint=opensearch.endpoint,
    )


@pytest.fixture(scope="module")
def emulator(layout: Layout, stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Emulator:
    return stack.emulator(layout, tmp_path_factory.mktemp("rie-logs"))


@dataclass
class Step:
    invocation: Invocation
    item_after: dict[str, Any] | None  # the document's registry item once the step returned

    def ok(self) -> Any:
        return self.invocation.ok()


@pytest.fixture(scope="module")
def steps(emulator: Emulator, stack: Stack, moto_endpoint: str) -> dict[str, Step]:
    """Each sample event sent once, in pipeline order, to its built function. The object is
    deleted before Remove runs, as it is before S3 sends Object Deleted."""
    done = {}
    s3 = moto_client("s3", moto_endpoint)
    for name in PIPELINE_ORDER:
        if name == "remove":
            s3.delete_object(Bucket=DOCS_BUCKET, Key=PDF_KEY)
        with serving(SITE) if name == "sync" else contextlib.nullcontext():
            if name == "sync":
                web = {"kind": "web", "url": SITE.url("/"), "rate": 0, "collection": "harbour"}
                s3.put_object(
                    Bucket=stack.artifacts, Key="sources/handbook.json", Body=json.dumps(web)
                )
            invocation = emulator.invoke(name, _event(name))
        done[name] = Step(invocation, _item(moto_endpoint, stack.table))
    return done


def _doc() -> dict[str, str]:
    return {
        "doc_id": DOC_ID,
        "version": VERSION,
        "bucket": DOCS_BUCKET,
        "key": PDF_KEY,
        "execution_id": EXECUTION,
        "source_url": "",  # an upload, not a page the sync wrote
    }


def _item(endpoint: str, table: str) -> dict[str, Any] | None:
    found = moto_client("dynamodb", endpoint).get_item(
        TableName=table, Key={"doc_id": {"S": DOC_ID}}, ConsistentRead=True
    )
    if "Item" not in found:
        return None
    plain = TypeDeserializer()
    return {k: plain.deserialize(v) for k, v in found["Item"].items()}


def test_rie_sample_pdf_is_the_version_the_events_name() -> None:
    assert hashlib.sha256((EXAMPLES / "dmca.pdf").read_bytes()).hexdigest() == VERSION


def test_rie_covers_every_handler_with_its_sample_event() -> None:
    handlers = {p.parent.name for p in (REPO / "functions").glob("*/app.py")}
    events = {p.stem for p in (REPO / "events").glob("*.json")}
    # The OCR function is a container image, not in `sam build`'s output here:
    # test_ocr_image.py runs it with events/ocr.json.
    assert handlers == events == set(PIPELINE_ORDER) | {"ocr"}


def test_rie_register_claims_the_uploaded_pdf(steps: dict[str, Step]) -> None:
    assert steps["register"].ok() == {"action": "process", "reason": "", "doc": _doc()}
    item = steps["register"].item_after
    assert item is not None
    assert (item["status"], item["execution_id"]) == ("QUEUED", EXECUTION)


def test_rie_convert_stores_the_pages(steps: dict[str, Step]) -> None:
    result = steps["convert"].ok()
    sample = _event("chunk")  # what the state machine hands Chunk is what Convert returned
    assert result == {
        "doc": _doc(),
        "title": sample["title"],
        "pages": sample["pages"],
        "pages_key": f"pages/{DOC_ID}/{VERSION}.json",
        "ocr_ranges": [],  # every page has a text layer: no OCR map
    }
    _expect_item(steps["convert"], status="CHUNKING", pages=sample["pages"])


def test_rie_chunk_writes_the_batch_the_embed_and_index_events_name(
    steps: dict[str, Step],
) -> None:
    result = steps["chunk"].ok()
    assert result["doc"] == _doc()
    assert result["batches"] == [BATCH_KEY]
    assert BATCH_KEY == _event("embed")["batch_key"] == _event("index")["batch_key"]
    assert result["chunks"] == _event("finalize")["chunks"], (
        "events/finalize.json should carry the chunk count that chunk returns"
    )
    _expect_item(steps["chunk"], status="EMBEDDING", chunks=result["chunks"])


def test_rie_embed_and_index_handle_the_batch(steps: dict[str, Step]) -> None:
    expected = {"doc": _doc(), "batch_key": BATCH_KEY, "chunks": steps["chunk"].ok()["chunks"]}
    assert steps["embed"].ok() == expected
    assert steps["index"].ok() == expected


def test_rie_index_and_remove_write_and_delete_chunks_in_opensearch(
    steps: dict[str, Step], opensearch: OpenSearchStub, stack: Stack
) -> None:
    # Index wrote the batch's chunks through the Bulk API (server-made ids, as on Serverless);
    # Remove deleted every one of them; no embedded index appeared beside them
    bulk = [path for method, path in opensearch.requests if path.endswith("/_bulk")]
    assert len(bulk) >= 2, opensearch.requests
    [index] = opensearch.indexes.values()
    assert index.docs == {}
    assert not stack.data_dir.exists()


def test_rie_index_function_without_an_opensearch_endpoint_names_the_variable(
    layout: Layout, stack: Stack, tmp_path: Path
) -> None:
    # Given the stack with the collection's endpoint unresolved (empty)
    known = {**stack.known, "VectorCollection.CollectionEndpoint": ""}
    emulator = Emulator(layout, known, stack.extra, tmp_path)

    # When Index runs its sample event, Then it fails with ConfigError naming the variable
    # (it used to write to an embedded SQLite index inside the Lambda)
    invocation = emulator.invoke("index", _event("index"))

    assert isinstance(invocation.body, dict), invocation.body
    assert invocation.body["errorType"] == "ConfigError"
    assert "the index function needs DOCCHAT_OPENSEARCH_ENDPOINT" in invocation.body["errorMessage"]


def test_rie_finalize_marks_the_document_indexed(steps: dict[str, Step]) -> None:
    result = steps["finalize"].ok()
    assert (result["doc_id"], result["status"]) == (DOC_ID, "INDEXED")
    chunks = _event("finalize")["chunks"]
    _expect_item(steps["finalize"], status="INDEXED", chunks=chunks, error="", error_code="")


def test_rie_mark_failed_and_watchdog_leave_an_indexed_document_alone(
    steps: dict[str, Step],
) -> None:
    unchanged = {"doc_id": DOC_ID, "status": "unchanged", "detail": "another run owns it"}
    assert steps["mark_failed"].ok() == unchanged
    assert steps["watchdog"].ok() == unchanged
    _expect_item(steps["watchdog"], status="INDEXED")


def test_rie_remove_forgets_the_deleted_pdf(steps: dict[str, Step]) -> None:
    assert steps["remove"].ok() == {"doc_id": DOC_ID, "status": "removed", "detail": ""}
    assert steps["remove"].item_after is None


def test_rie_sync_writes_the_defined_sites_page_into_its_collection(
    steps: dict[str, Step], stack: Stack, moto_endpoint: str
) -> None:
    # The scheduler's event (events/sync.json) syncs every source defined in the artifacts
    # bucket: the site's one page becomes an object under the collection's prefix, with its
    # address in the object's metadata, and the run's lease is released
    result = steps["sync"].ok()
    [synced] = result["sources"]
    assert (synced["name"], synced["fetched"], synced["failed"]) == ("handbook", 1, 0), result
    assert (result["removed_sources"], result["left_to_another"]) == ([], "")
    s3 = moto_client("s3", moto_endpoint)
    [key] = [o["Key"] for o in s3.list_objects_v2(Bucket=DOCS_BUCKET)["Contents"]]
    assert key.startswith("collections/harbour/sources/handbook/") and key.endswith("/index.html")
    metadata = s3.head_object(Bucket=DOCS_BUCKET, Key=key)["Metadata"]
    assert metadata == {"docchat-source-url": SITE.url("/")}
    states = s3.list_objects_v2(Bucket=stack.artifacts, Prefix="sources/state/")["Contents"]
    assert [o["Key"] for o in states] == ["sources/state/handbook.json"]


def test_rie_handler_error_fails_the_invocation(emulator: Emulator) -> None:
    # Given an event Convert cannot parse, When it runs, Then the emulator reports the
    # handler's exception and ok() fails with its type and message.
    invocation = emulator.invoke("convert", {"doc_id": DOC_ID})

    # The emulator answers 200 with the error as the body (no X-Amz-Function-Error header).
    assert isinstance(invocation.body, dict)
    assert invocation.body["errorType"] == "ValidationError"
    with pytest.raises(
        AssertionError,
        match=r"(?s)ValidationError.*validation errors? for union\[DocRef,AfterOcr\]",
    ):
        invocation.ok()


def _expect_item(step: Step, **expected: Any) -> None:
    """The document's registry item, once the step returned, has the `expected` fields."""
    item = step.item_after
    assert item is not None, f"{step.invocation.name}: the document vanished from the registry"
    assert {k: item.get(k) for k in expected} == expected, f"{step.invocation.name}: {item}"


def test_rie_every_function_runs_with_lambdas_environment_and_no_pythonpath(
    emulator: Emulator, layout: Layout
) -> None:
    for name in PIPELINE_ORDER:
        env = emulator.environment(name)
        assert "PYTHONPATH" not in env, name
        assert env["LAMBDA_TASK_ROOT"] == str(layout.task_root(name))
        assert env["_HANDLER"] == "app.handler"
        assert (layout.task_root(name) / "app.py").is_file()
        assert env["DOCCHAT_CHUNK_SIZE"] == str(
            layout.template["Parameters"]["ChunkSize"]["Default"]
        ), "the template's environment, resolved"
