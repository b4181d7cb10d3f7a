"""The DynamoDB registry (the cloud's catalog) holds to the DocumentCatalog contract, over
moto with the stack's own table definition."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from docchat.adapters.dynamodb_registry import DynamoRegistry
from tests.conftest import table_schema
from tests.contract.catalog import DocumentCatalogContract


class TestDynamoCatalog(DocumentCatalogContract):
    TELLS_REVISIONS = False

    @pytest.fixture
    def catalog(self, dummy_aws: None) -> Iterator[DynamoRegistry]:
        with mock_aws():
            table = boto3.resource("dynamodb", region_name="eu-west-1").create_table(
                TableName="documents", **table_schema("DocumentsTable")
            )
            yield DynamoRegistry(table)
