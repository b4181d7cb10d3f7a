"""The chat function's routes under moto's IAM enforcement, signed by a user that holds the
chat role's own policies from the SAM-translated template: the move is allowed, and a call the
role does not allow answers a typed error that names it, not a bare 500."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws
from moto.core import set_initial_no_auth_action_count

from docchat.models import DocStatus
from docchat.serve.access import GROUPS_KEY
from tests.conftest import table_schema
from tests.functions.conftest import ARTIFACTS_BUCKET, DOCS_BUCKET, REGION, TABLE
from tests.infra.intrinsics import Stack
from tests.infra.test_role_coverage import CONVERSATIONS, KNOWN
from tests.infra.test_sam_transform import _translate

# The ingestion state machine under moto and SAM's translator: `make test`, not `make unit`.
pytestmark = pytest.mark.slow
DOC_ID = "d" * 16
CLAIMS = {"authorizer": {"claims": {"sub": "root-sub", "cognito:groups": "admins"}}}
Policies = list[dict[str, Any]]


def _chat_role_policies() -> Policies:
    """The chat role's inline policies as deployed, for moto to enforce on the documents table.
    moto authorizes a DynamoDB request as one on resource "*" (its DynamoDB responses name no
    resource), so the role's statements on the documents table are widened to "*" and its
    statements on other tables left out (the routes here touch only the documents table): moto
    then judges the actions the role allows on that table; test_role_coverage.py judges
    resources. S3's resources moto checks as they are."""
    table = KNOWN["DocumentsTable.Arn"]
    resources = Stack(_translate("COGNITO"), known=KNOWN).resources()
    policies: Policies = resources["ChatFunctionRole"]["Properties"]["Policies"]
    for policy in policies:
        kept = []
        for statement in policy["PolicyDocument"]["Statement"]:
            if all(a.startswith("dynamodb:") for a in _as_list(statement["Action"])):
                if _as_list(statement["Resource"]) != [table]:
                    continue
                statement["Resource"] = "*"
            kept.append(statement)
        policy["PolicyDocument"]["Statement"] = kept
    return policies


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def _without(action: str, policies: Policies) -> Policies:
    """`policies` with `action` taken out of every statement."""
    trimmed = json.loads(json.dumps(policies))
    for policy in trimmed:
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            if isinstance(actions, list) and action in actions:
                actions.remove(action)
    return trimmed


@pytest.fixture
def chat_as(
    chat_function_env: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[Policies], TestClient]]:
    """A client of the chat app whose AWS calls are signed by an IAM user holding `policies`;
    the document DOC_ID is registered in the default collection."""
    for name, value in {
        "AWS_REGION": REGION,
        "DOCCHAT_API_AUTH": "COGNITO",
        "DOCCHAT_AUTH_DOMAIN": "https://docchat-x.auth.us-east-1.amazoncognito.com",
        "DOCCHAT_AUTH_CLIENT_ID": "abc123",
        "DOCCHAT_DOCUMENTS_TABLE": TABLE,
        "DOCCHAT_CONVERSATIONS_TABLE": CONVERSATIONS,
        "DOCCHAT_DOCUMENTS_BUCKET": DOCS_BUCKET,
        "DOCCHAT_ARTIFACTS_BUCKET": ARTIFACTS_BUCKET,
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        for bucket in (DOCS_BUCKET, ARTIFACTS_BUCKET):
            s3.create_bucket(Bucket=bucket)
        groups = {"admin_groups": ["admins"], "groups": {}}
        s3.put_object(Bucket=ARTIFACTS_BUCKET, Key=GROUPS_KEY, Body=json.dumps(groups).encode())
        table = boto3.resource("dynamodb", region_name=REGION).create_table(
            TableName=TABLE, **table_schema("DocumentsTable")
        )
        table.put_item(
            Item={
                "doc_id": DOC_ID,
                "source": f"{DOCS_BUCKET}/uploads/ab/report.pdf",
                "title": "Report",
                "version": "v1",
                "status": DocStatus.INDEXED.value,
                "collections": ["default"],
                "updated_at": 1,
                "sequencer": "01",
                "execution_id": "",
                "index": "",
            }
        )
        iam = boto3.client("iam", region_name=REGION)

        def client(policies: Policies) -> TestClient:
            iam.create_user(UserName="chat")
            for policy in policies:
                iam.put_user_policy(
                    UserName="chat",
                    PolicyName=policy["PolicyName"],
                    # SAM writes no Version; IAM then reads the 2008 grammar, moto refuses it.
                    PolicyDocument=json.dumps(
                        {"Version": "2012-10-17", **policy["PolicyDocument"]}
                    ),
                )
            key = iam.create_access_key(UserName="chat")["AccessKey"]
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
            # boto3's default session keeps the credentials it first found: start a new one.
            monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
            from docchat.wiring.cloud import cloud_app, services

            services.cache_clear()
            headers = {"x-amzn-request-context": json.dumps(CLAIMS)}
            return TestClient(cloud_app(), headers=headers, raise_server_exceptions=False)

        yield client


def _enforced(call: Callable[[], Any]) -> Any:
    """`call` with moto checking every request against the caller's IAM policies."""
    return set_initial_no_auth_action_count(0)(call)()


def _move(client: TestClient) -> Any:
    return _enforced(
        lambda: client.put(f"/documents/{DOC_ID}/collections", json={"collections": ["finance"]})
    )


def test_move_is_allowed_by_the_chat_roles_own_policy(chat_as: Any) -> None:
    client = chat_as(_chat_role_policies())

    reply = _move(client)

    assert reply.status_code == 200, reply.text
    assert reply.json()["collections"] == ["finance"]
    table = boto3.resource("dynamodb", region_name=REGION).Table(TABLE)
    assert table.get_item(Key={"doc_id": DOC_ID})["Item"]["collections"] == ["finance"]


def test_a_call_the_role_refuses_answers_a_typed_error_naming_it(chat_as: Any) -> None:
    # Given a chat role without dynamodb:UpdateItem (as every stack had it)
    client = chat_as(_without("dynamodb:UpdateItem", _chat_role_policies()))

    reply = _move(client)

    # Then the refusal is typed and says which operation the role must allow
    assert reply.status_code == 502, reply.text
    error = reply.json()["error"]
    assert error["code"] == "aws_access_denied"
    assert error["message"].startswith(
        "AWS refused UpdateItem: this function's IAM role does not allow it."
    )
    assert "template.yaml" in error["message"]
    assert "dynamodb:UpdateItem" in error["message"]  # AWS's own words, kept
