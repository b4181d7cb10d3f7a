"""The DynamoDB registry's read side, against botocore's Stubber."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.stub import Stubber

from docchat.adapters.dynamodb_registry import DynamoRegistry
from docchat.models import DocStatus


@pytest.fixture
def table(dummy_aws: None) -> Iterator[tuple[DynamoRegistry, Stubber]]:
    table = boto3.resource("dynamodb", region_name="eu-west-1").Table("docs")
    with Stubber(table.meta.client) as stubber:
        yield DynamoRegistry(table), stubber
        stubber.assert_no_pending_responses()


def _item(doc_id: str, status: str) -> dict[str, dict[str, str]]:
    # Scan's wire format: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Scan.html
    return {
        "doc_id": {"S": doc_id},
        "source": {"S": f"bucket/{doc_id}.pdf"},
        "version": {"S": "v1"},
        "status": {"S": status},
        "pages": {"N": "3"},
    }


def test_dynamodb_registry_lists_documents_strongly_consistent_across_pages(
    table: tuple[DynamoRegistry, Stubber],
) -> None:
    # A chat shows chunks only of versions this lists INDEXED: an eventually consistent Scan
    # could still list a version that was just replaced.
    registry, stubber = table
    stubber.add_response(
        "scan",
        {"Items": [_item("b", "INDEXED")], "LastEvaluatedKey": {"doc_id": {"S": "b"}}},
        {"TableName": "docs", "ConsistentRead": True},
    )
    stubber.add_response(
        "scan",
        {"Items": [_item("a", "FAILED")]},
        {"TableName": "docs", "ConsistentRead": True, "ExclusiveStartKey": {"doc_id": "b"}},
    )

    records = registry.documents()

    assert [(r.doc_id, r.status, r.pages) for r in records] == [
        ("a", DocStatus.FAILED, 3),
        ("b", DocStatus.INDEXED, 3),
    ]
