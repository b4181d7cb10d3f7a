"""`make destroy` and `make reindex` (infra/stack_tools.py) against S3 in moto."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.conftest import REPO

DOCS, ARTIFACTS = "docchat-documents-x", "docchat-artifacts-x"


def _tools() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stack_tools", REPO / "infra" / "stack_tools.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Session:
    """boto3's session with the stack's DescribeStacks answered as CloudFormation shapes it
    (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html)."""

    class _CloudFormation:
        def describe_stacks(self, *, StackName: str) -> dict[str, Any]:
            outputs = {"DocumentsBucketName": DOCS, "ArtifactsBucketName": ARTIFACTS}
            return {
                "Stacks": [
                    {
                        "StackName": StackName,
                        "StackStatus": "UPDATE_COMPLETE",
                        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()],
                    }
                ]
            }

    def client(self, name: str) -> Any:
        return self._CloudFormation() if name == "cloudformation" else boto3.client(name)


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        client = boto3.client("s3")
        for bucket in (DOCS, ARTIFACTS):
            client.create_bucket(Bucket=bucket)
        client.put_bucket_versioning(Bucket=DOCS, VersioningConfiguration={"Status": "Enabled"})
        yield client


def _versions(s3: Any, bucket: str) -> int:
    listed = s3.list_object_versions(Bucket=bucket)
    return len(listed.get("Versions", [])) + len(listed.get("DeleteMarkers", []))


def test_stack_tools_empty_leaves_buckets_cloudformation_can_delete(s3: Any) -> None:
    # Given documents with old versions and delete markers, and artifacts
    for n in range(3):
        s3.put_object(Bucket=DOCS, Key="reports/a b.pdf", Body=f"%PDF-1.7 v{n}".encode())
    s3.put_object(Bucket=DOCS, Key="gone.pdf", Body=b"%PDF-1.7")
    s3.delete_object(Bucket=DOCS, Key="gone.pdf")  # a delete marker
    s3.put_object(Bucket=ARTIFACTS, Key="pages/a/v.json", Body=b"{}")
    assert _versions(s3, DOCS) == 5

    # When `make destroy` runs and the caller types the stack's name
    said = _tools().main(["empty", "docchat"], session=_Session(), answer=lambda _: "docchat")

    # Then both buckets are empty of every version, and can be deleted
    assert said == 0
    assert _versions(s3, DOCS) == 0 and _versions(s3, ARTIFACTS) == 0
    s3.delete_bucket(Bucket=DOCS)
    s3.delete_bucket(Bucket=ARTIFACTS)


def test_stack_tools_empty_deletes_nothing_without_the_stacks_name(s3: Any) -> None:
    s3.put_object(Bucket=DOCS, Key="keep.pdf", Body=b"%PDF-1.7")

    said = _tools().main(["empty", "docchat"], session=_Session(), answer=lambda _: "yes")

    assert said == 1
    assert _versions(s3, DOCS) == 1


def test_stack_tools_reindex_copies_each_current_object_onto_itself(s3: Any) -> None:
    s3.put_object(Bucket=DOCS, Key="a (1).pdf", Body=b"%PDF-1 a", ContentType="application/pdf")
    s3.put_object(Bucket=DOCS, Key="dir/b.pdf", Body=b"%PDF-1 b", Metadata={"who": "me"})

    said = _tools().main(["reindex", "docchat"], session=_Session())

    assert said == 0
    assert _versions(s3, DOCS) == 4  # a new version of each, same bytes and metadata
    copied = s3.get_object(Bucket=DOCS, Key="dir/b.pdf")
    assert (copied["Body"].read(), copied["Metadata"]) == (b"%PDF-1 b", {"who": "me"})
    assert s3.head_object(Bucket=DOCS, Key="a (1).pdf")["ContentType"] == "application/pdf"
