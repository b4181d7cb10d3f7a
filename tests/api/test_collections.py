"""Collections and who may see them (issue #31), through the local server with a users file:
two users, each reading one collection, every route; outside documents are 404 exactly like
missing ones; a question whose best passages are all in the other collection is answered
from the user's own, and the other's text is in no event of the stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from docchat.config import Settings
from docchat.serve.access import UsersFile, token_sha256
from docchat.serve.mcp import mcp_http_app
from docchat.sources.store import (
    GraphSource,
    SourceEntry,
    SourcesFile,
    SyncReport,
    WebSource,
    now,
    save_sources,
)
from docchat.wiring.local import guarded_local_app
from tests.api.collectionkit import (
    ANA_ASKS_BRIDGES,
    OTHER_TEXT,
    Matrix,
    chat_events,
    check_health,
    check_mcp,
    mcp_session,
    not_theirs,
    streamed,
)
from tests.chatkit import ServedApp, local_parts
from tests.conftest import WordEmbedder
from tests.mcpkit import WEB_URL, backend_of, ingested

USERS = {
    "users": [
        {
            "name": "ana",
            "token_sha256": token_sha256("ana-token"),
            "read": ["ferries"],
            "write": ["ferries"],
        },
        {
            "name": "bo",
            "token_sha256": token_sha256("bo-token"),
            "read": ["bridges"],
            "write": ["bridges"],
        },
        {
            "name": "cy",
            "token_sha256": token_sha256("cy-token"),
            "write": ["ferries", "bridges"],
        },
        {"name": "root", "token_sha256": token_sha256("root-token"), "admin": True},
    ]
}
ROOT, CY = {"authorization": "Bearer root-token"}, {"authorization": "Bearer cy-token"}
ANA, BO = {"authorization": "Bearer ana-token"}, {"authorization": "Bearer bo-token"}


@dataclass
class Local:
    url: str
    ids: dict[str, str]
    mcp_url: str
    data_dir: Path

    def call(self, method: str, path: str, user: dict[str, str], **kwargs: Any) -> httpx.Response:
        headers = {**user, **kwargs.pop("headers", {})}
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    data_dir = tmp_path / "data"
    ids = ingested(data_dir, WordEmbedder(), own_collections=True)
    users_path = tmp_path / "users.json"
    users_path.write_text(json.dumps(USERS))
    users = UsersFile.load(users_path)
    settings = Settings(data_dir=data_dir)
    parts = local_parts(settings)
    app = guarded_local_app(
        settings, lambda: parts.backend, uploads=lambda _: parts.uploads, users=users
    )
    mcp_backend = backend_of(data_dir, WordEmbedder())
    mcp = mcp_http_app(lambda: mcp_backend, access_of=users.access_of, web_url=WEB_URL)
    served, served_mcp = ServedApp(app), ServedApp(mcp, lifespan="on")
    served.start()
    served_mcp.start()
    try:
        yield Local(
            f"http://127.0.0.1:{served.port}",
            ids,
            f"http://127.0.0.1:{served_mcp.port}/mcp",
            data_dir,
        )
    finally:
        served.stop()
        served_mcp.stop()
        parts.uploads.close()
        parts.index.close()


def test_each_user_sees_only_their_collections_on_every_route(local: Local) -> None:
    ferries, bridges = local.ids["ferries"], local.ids["bridges"]
    Matrix(local.call, ANA, "ferries", ferries, bridges, cloud=False).run()
    Matrix(local.call, BO, "bridges", bridges, ferries, cloud=False).run()
    not_theirs("c-ferries", local.call, BO, owner=ANA)
    not_theirs("c-bridges", local.call, ANA, owner=BO)


def test_mcp_tools_and_resources_see_only_the_callers_collections(local: Local) -> None:
    ferries, bridges = local.ids["ferries"], local.ids["bridges"]
    check_mcp(mcp_session(local.mcp_url, ANA, ferries, bridges), ferries, bridges)
    refused = httpx.post(local.mcp_url, json={}, headers={"authorization": "Bearer nobody"})
    assert refused.status_code == 401


def test_a_401_with_a_users_file_asks_for_the_users_own_token(local: Local) -> None:
    # Given a server started with a users file (and no --token)
    for headers in ({}, {"authorization": "Bearer mallory"}, {"authorization": "Basic eA=="}):
        # When a request comes without a token of the file's users
        refused = httpx.get(local.url + "/documents", headers=headers, timeout=30)
        # Then the 401 asks for the person's own token, not the server's --token
        assert refused.status_code == 401
        message = refused.json()["error"]["message"]
        assert "your own token" in message, message
        assert "--token" not in message and "DOCCHAT_API_TOKEN" not in message
    refused = httpx.post(local.mcp_url, json={}, headers={"authorization": "Bearer nobody"})
    assert "your own token" in refused.json()["error"]["message"]


def test_health_counts_only_what_the_caller_may_read(local: Local) -> None:
    check_health(local.call, ROOT, ANA, BO)


def test_a_token_not_in_the_users_file_is_refused_even_from_this_machine(local: Local) -> None:
    for headers in ({}, {"authorization": "Bearer mallory"}):
        refused = httpx.get(local.url + "/documents", headers=headers, timeout=30)
        assert refused.status_code == 401
        assert "token" in refused.json()["error"]["message"]
    assert httpx.get(local.url + "/", timeout=30).status_code == 200  # the page asks for it


def test_the_best_passages_in_another_collection_never_reach_the_stream(local: Local) -> None:
    # Unscoped, the question's best passage is the stone bridge page, in Bo's collection
    text = streamed(
        local.call, "/chat", BO, {"messages": [{"role": "user", "content": ANA_ASKS_BRIDGES}]}
    )
    assert "Monks built the stone bridge" in text
    # Ana asks it: every search, source, quote and citation is of her own collection
    text = streamed(
        local.call, "/chat", ANA, {"messages": [{"role": "user", "content": ANA_ASKS_BRIDGES}]}
    )
    for words in OTHER_TEXT:
        assert words not in text, words
    assert local.ids["bridges"] not in text
    events = chat_events(text)
    sources = [p for kind, e in events if kind == "sources" for p in e["passages"]]
    assert sources and {p["doc_id"] for p in sources} == {local.ids["ferries"]}


def test_a_move_changes_who_sees_a_document_without_reembedding(
    local: Local, tmp_path: Path
) -> None:
    ferries = local.ids["ferries"]
    chunks_before = _chunks(tmp_path / "data")
    # Ana writes `ferries` but not `bridges`: she cannot move it there
    refused = local.call(
        "PUT", f"/documents/{ferries}/collections", ANA, json={"collections": ["bridges"]}
    )
    assert refused.status_code == 403
    # An admin can; then Bo finds it in search and Ana no longer does
    moved = local.call(
        "PUT", f"/documents/{ferries}/collections", ROOT, json={"collections": ["bridges"]}
    )
    assert moved.status_code == 200, moved.text
    assert moved.json()["collections"] == ["bridges"]
    assert local.call("GET", f"/documents/{ferries}", ANA).status_code == 404
    listed = local.call("GET", "/documents", BO).json()["documents"]
    assert {d["doc_id"] for d in listed} == {ferries, local.ids["bridges"]}
    text = streamed(local.call, "/chat", BO, {"messages": [{"role": "user", "content": "ferry"}]})
    assert ferries in text
    assert _chunks(tmp_path / "data") == chunks_before  # the same rows: nothing re-embedded


def _chunks(data_dir: Path) -> list[tuple[Any, ...]]:
    import sqlite3

    with sqlite3.connect(Settings(data_dir=data_dir).index_path) as db:
        return db.execute("SELECT id, chunk_id, doc_id, version, vector FROM chunks").fetchall()


def test_an_index_from_before_collections_opens_with_every_document_in_default(
    tmp_path: Path,
) -> None:
    import shutil
    import sqlite3

    from docchat.adapters.sqlite_index import SqliteIndex

    # Given an index as docchat wrote it before collections (no `collections` column), copied
    data_dir = tmp_path / "data"
    ids = ingested(data_dir, WordEmbedder(), own_collections=True)
    index_path = Settings(data_dir=data_dir).index_path
    db = sqlite3.connect(index_path)
    db.execute("ALTER TABLE documents DROP COLUMN collections")
    db.commit()
    db.close()  # the last connection: its WAL is written into the file
    copy = tmp_path / "copy" / index_path.name
    copy.parent.mkdir()
    shutil.copy(index_path, copy)
    with sqlite3.connect(copy) as db:
        assert "collections" not in {r[1] for r in db.execute("PRAGMA table_info(documents)")}

    # When this docchat opens it, every document is in the default collection
    embedder = WordEmbedder()
    index = SqliteIndex(copy, embedding_model=embedder.model_id, dimension=embedder.dimension)
    try:
        assert {d.doc_id: d.collections for d in index.documents()} == {
            ids["ferries"]: ["default"],
            ids["bridges"]: ["default"],
        }
    finally:
        index.close()


def test_registry_items_without_collections_read_as_default() -> None:
    import boto3
    from moto import mock_aws

    from docchat.adapters.dynamodb_registry import DynamoRegistry
    from tests.conftest import table_schema

    with mock_aws():
        table = boto3.resource("dynamodb", region_name="eu-west-1").create_table(
            TableName="documents", **table_schema("DocumentsTable")
        )
        # An item as a stack wrote it before collections
        table.put_item(
            Item={
                "doc_id": "d1",
                "source": "b/uploads/a/x.pdf",
                "version": "v1",
                "status": "INDEXED",
                "sequencer": "01",
            }
        )
        registry = DynamoRegistry(table)
        assert registry.document("d1").collections == ["default"]  # type: ignore[union-attr]
        # A move writes the attribute; the entry then reads as moved
        registry.update("d1", "v1", collections=["finance"])
        assert registry.documents()[0].collections == ["finance"]


def test_each_user_sees_the_synced_sources_of_the_collections_they_read(local: Local) -> None:
    # Given a web site synced into ferries (its last sync had a failure) and a SharePoint
    # drive, never synced, into bridges
    data_dir = local.data_dir
    report = SyncReport(at=now(), fetched=3, failed=1, last_failure="https://f.example/x: 500")
    ferries = WebSource(name="timetable", url="https://f.example/", collection="ferries")
    bridges = GraphSource(
        name="plans",
        tenant="contoso",
        client_id="app-1",
        secret_env="PLANS_SECRET",
        drive="b!abc",
        collection="bridges",
    )
    save_sources(
        data_dir,
        SourcesFile(
            sources={
                "timetable": SourceEntry(source=ferries, last_sync=report),
                "plans": SourceEntry(source=bridges),
            }
        ),
    )

    def names(user: dict[str, str], query: str = "") -> list[str]:
        response = local.call("GET", f"/sources{query}", user)
        assert response.status_code == 200, response.text
        assert "PLANS_SECRET" not in response.text and "app-1" not in response.text
        return [s["name"] for s in response.json()["sources"]]

    # Then each reader sees their own collection's source, an admin both
    assert names(ANA) == ["timetable"] and names(BO) == ["plans"]
    assert sorted(names(ROOT)) == ["plans", "timetable"]
    assert names(ANA, "?collection=bridges") == [] and names(ROOT, "?collection=bridges") == [
        "plans"
    ]
    # with what its last sync did, the failure a person can act on included
    (shown,) = local.call("GET", "/sources", ANA).json()["sources"]
    assert shown["url"] == "https://f.example/" and shown["collection"] == "ferries"
    assert shown["last_sync"]["fetched"] == 3 and shown["last_sync"]["failed"] == 1
    assert shown["last_sync"]["last_failure"] == "https://f.example/x: 500"
    assert local.call("GET", "/sources", {}).status_code == 401
