"""Collections through the cloud app (the chat function's `cloud_app`) behind the Cognito
stand-in (tests/web/fake_cognito.py: API Gateway's stage and authorizer): two users in two
Cognito groups, mapped to collections by access/groups.json in the artifacts bucket, each sees
only their collection's documents on every route and in MCP; the registry is DynamoDB (moto)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from moto import mock_aws

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.models import DocStatus
from docchat.serve.access import GROUPS_KEY, GroupsSource, cognito_access_for
from docchat.serve.identity import cognito_user
from docchat.serve.mcp import mcp_http_app
from docchat.wiring.cloud import cloud_app, services
from tests.api.collectionkit import (
    Matrix,
    check_health,
    check_mcp,
    mcp_session,
    not_theirs,
)
from tests.chatkit import ServedApp
from tests.conftest import WordEmbedder, table_schema
from tests.mcpkit import WEB_URL, ingested
from tests.unit.test_conversation_stores import conversations_table
from tests.web.fake_cognito import FakeCognito, StageGate

REGION = "eu-west-1"
DOCS, ARTIFACTS = "docchat-docs", "docchat-artifacts"
GROUPS = {
    "admin_groups": ["admins"],
    "groups": {
        "ferry-team": {"read": ["ferries"], "write": ["ferries"]},
        "bridge-team": {"read": ["bridges"], "write": ["bridges"]},
        "both-teams": {"write": ["ferries", "bridges"]},
    },
}

#: Each user's Cognito groups.
USERS = {"ana": ["ferry-team"], "bo": ["bridge-team"], "cy": ["both-teams"], "root": ["admins"]}


@dataclass
class Cloud:
    url: str
    mcp_url: str
    ids: dict[str, str]
    tokens: dict[str, str]

    def call(self, method: str, path: str, user: str, **kwargs: Any) -> httpx.Response:
        headers = {"authorization": self.tokens[user], **kwargs.pop("headers", {})}
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)


@pytest.fixture
def cloud(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat_function_env: None
) -> Iterator[Cloud]:
    for name, value in {
        "DOCCHAT_API_AUTH": "COGNITO",
        "DOCCHAT_AUTH_DOMAIN": "https://docchat-x.auth.eu-west-1.amazoncognito.com",
        "DOCCHAT_AUTH_CLIENT_ID": "abc123",
        "AWS_REGION": REGION,
        "DOCCHAT_DOCUMENTS_BUCKET": DOCS,
        "DOCCHAT_ARTIFACTS_BUCKET": ARTIFACTS,
    }.items():
        monkeypatch.setenv(name, value)
    embedder = WordEmbedder()
    ids = ingested(tmp_path / "data", embedder, own_collections=True)
    index = SqliteIndex(
        tmp_path / "data" / "index.sqlite3",
        embedding_model=embedder.model_id,
        dimension=embedder.dimension,
    )
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        for bucket in (DOCS, ARTIFACTS):
            s3.create_bucket(
                Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION}
            )
        s3.put_object(Bucket=ARTIFACTS, Key=GROUPS_KEY, Body=json.dumps(GROUPS).encode())
        table = boto3.resource("dynamodb", region_name=REGION).create_table(
            TableName="docchat-documents", **table_schema("DocumentsTable")
        )
        conversations_table("docchat-conversations", region=REGION)
        for record in index.documents():
            assert record.status == DocStatus.INDEXED
            [name] = record.collections
            key = f"collections/{name}/uploads/0123/{name}.pdf"
            s3.put_object(Bucket=DOCS, Key=key, Body=b"%PDF-1.4")
            item = {**record.model_dump(mode="json"), "source": f"{DOCS}/{key}"}
            item.update(updated_at=1, sequencer="01", execution_id="", index="")
            table.put_item(Item=item)
        # The chat function's services, with the index and embedder of this machine
        live = services("chat")
        live.__dict__.update(index=index, embedder=embedder, page_store=index, reranker=None)
        cognito = FakeCognito(
            users={f"{name}@example.com": name[0] for name in USERS},
            groups={f"{name}@example.com": groups for name, groups in USERS.items()},
        )
        app = ServedApp(StageGate(cloud_app(), cognito))
        access_of = cognito_access_for(
            GroupsSource(lambda: live.objects, ARTIFACTS).mapping, cognito_user
        )
        mcp = mcp_http_app(lambda: live.backend, access_of=access_of, web_url=WEB_URL)
        mcp_app = ServedApp(StageGate(mcp, cognito), lifespan="on")
        app.start()
        mcp_app.start()
        try:
            tokens = {
                name: cognito.tokens(f"{name}@example.com", refresh=False)["id_token"]
                for name in USERS
            }
            yield Cloud(
                f"http://127.0.0.1:{app.port}/v1",
                f"http://127.0.0.1:{mcp_app.port}/v1/mcp",
                ids,
                tokens,
            )
        finally:
            app.stop()
            mcp_app.stop()
            index.close()


def test_each_cognito_group_sees_only_its_collection_on_every_route(cloud: Cloud) -> None:
    ferries, bridges = cloud.ids["ferries"], cloud.ids["bridges"]
    Matrix(cloud.call, "ana", "ferries", ferries, bridges, cloud=True).run()
    Matrix(cloud.call, "bo", "bridges", bridges, ferries, cloud=True).run()
    not_theirs("c-ferries", cloud.call, "bo", owner="ana")
    not_theirs("c-bridges", cloud.call, "ana", owner="bo")
    # The presigned GET is of the caller's own document's object
    link = cloud.call("GET", f"/documents/{ferries}/file", "ana").json()
    assert "/collections/ferries/uploads/" in link["url"]


def test_health_counts_only_what_the_cognito_groups_may_read(cloud: Cloud) -> None:
    check_health(cloud.call, "root", "ana", "bo")


def test_mcp_over_the_stage_sees_only_the_callers_collection(cloud: Cloud) -> None:
    ferries, bridges = cloud.ids["ferries"], cloud.ids["bridges"]
    headers = {"authorization": cloud.tokens["ana"]}
    check_mcp(mcp_session(cloud.mcp_url, headers, ferries, bridges), ferries, bridges)


def test_each_cognito_group_sees_the_stacks_sources_of_its_collections(cloud: Cloud) -> None:
    # Given a web source defined for ferries and a definition that is not JSON
    s3 = boto3.client("s3", region_name=REGION)
    site = {"kind": "web", "url": "https://f.example/", "collection": "ferries"}
    s3.put_object(Bucket=ARTIFACTS, Key="sources/timetable.json", Body=json.dumps(site).encode())
    s3.put_object(Bucket=ARTIFACTS, Key="sources/broken.json", Body=b"{not json")

    def names(user: str) -> list[str]:
        response = cloud.call("GET", "/sources", user)
        assert response.status_code == 200, response.text
        return [s["name"] for s in response.json()["sources"]]

    # Then the ferry team and an admin see it, the bridge team does not, and the broken
    # definition is not listed (an admin's /health says why)
    assert names("ana") == ["timetable"] and names("root") == ["timetable"]
    assert names("bo") == []
    (shown,) = cloud.call("GET", "/sources", "ana").json()["sources"]
    assert shown == {
        "name": "timetable",
        "kind": "web",
        "url": "https://f.example/",
        "collection": "ferries",
        "documents": 0,
        "last_sync": None,
    }
