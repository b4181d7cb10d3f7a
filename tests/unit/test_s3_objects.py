"""S3Objects on a real botocore client with a Stubber answering as S3 documents it.

GetObject / HeadObject on a missing key answer 404 (NoSuchKey; HEAD has no body, so only the
status) when the caller may s3:ListBucket, and 403 AccessDenied when it may not:
https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html (Permissions),
https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from docchat.adapters.s3_objects import S3Objects
from docchat.errors import DocchatError, ObjectAccessDeniedError, ObjectMissingError

BUCKET = "docchat-documents-example"
KEY = "reports/dmca.pdf"

pytestmark = pytest.mark.usefixtures("dummy_aws")


@pytest.fixture
def stubbed() -> Iterator[tuple[S3Objects, Stubber]]:
    client = boto3.client("s3", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield S3Objects(client), stubber
        stubber.assert_no_pending_responses()


def _denied(stubber: Stubber, method: str) -> None:
    # S3's 403 for a key read without s3:ListBucket (or without s3:GetObject).
    stubber.add_client_error(
        method,
        service_error_code="AccessDenied" if method == "get_object" else "403",
        service_message="Access Denied" if method == "get_object" else "Forbidden",
        http_status_code=403,
        expected_params={"Bucket": BUCKET, "Key": KEY},
    )


def test_s3_objects_read_of_a_key_without_list_bucket_raises_access_denied(
    stubbed: tuple[S3Objects, Stubber],
) -> None:
    objects, stubber = stubbed
    _denied(stubber, "get_object")

    with pytest.raises(ObjectAccessDeniedError) as raised:
        objects.sha256(BUCKET, KEY)

    message = str(raised.value)
    assert f"s3://{BUCKET}/{KEY}" in message
    assert "s3:ListBucket" in message and "s3:GetObject" in message
    assert isinstance(raised.value, DocchatError)  # MarkFailed records its message as is


def test_s3_objects_missing_key_raises_object_missing(stubbed: tuple[S3Objects, Stubber]) -> None:
    objects, stubber = stubbed
    stubber.add_client_error(
        "get_object",
        service_error_code="NoSuchKey",
        service_message="The specified key does not exist.",
        http_status_code=404,
        expected_params={"Bucket": BUCKET, "Key": KEY},
    )

    with pytest.raises(ObjectMissingError, match="no longer exists"):
        objects.read(BUCKET, KEY)


def test_s3_objects_exists_is_false_for_a_404_head(stubbed: tuple[S3Objects, Stubber]) -> None:
    objects, stubber = stubbed
    stubber.add_client_error(
        "head_object",
        service_error_code="404",
        service_message="Not Found",
        http_status_code=404,
        expected_params={"Bucket": BUCKET, "Key": KEY},
    )

    assert objects.exists(BUCKET, KEY) is False


def test_s3_objects_exists_is_true_for_a_current_object(stubbed: tuple[S3Objects, Stubber]) -> None:
    objects, stubber = stubbed
    stubber.add_response(
        "head_object",
        {"ContentLength": 5, "ETag": '"b1946ac92492d2347c6235b4d2611184"'},
        {"Bucket": BUCKET, "Key": KEY},
    )

    assert objects.exists(BUCKET, KEY) is True


def test_s3_objects_exists_raises_access_denied_for_a_403_head(
    stubbed: tuple[S3Objects, Stubber],
) -> None:
    objects, stubber = stubbed
    _denied(stubber, "head_object")

    with pytest.raises(ObjectAccessDeniedError, match="s3:ListBucket"):
        objects.exists(BUCKET, KEY)


def test_s3_objects_sha256_streams_the_body(stubbed: tuple[S3Objects, Stubber]) -> None:
    objects, stubber = stubbed
    body = StreamingBody(io.BytesIO(b"hello"), 5)
    stubber.add_response("get_object", {"Body": body}, {"Bucket": BUCKET, "Key": KEY})

    assert objects.sha256(BUCKET, KEY) == (
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    )


@pytest.mark.parametrize(
    ("code", "status"),
    [
        # The key exists (412 Precondition Failed), or another conditional write to the key
        # raced this one (409 Conflict): S3 user guide, "How to prevent object overwrites with
        # conditional writes", https://docs.aws.amazon.com/AmazonS3/latest/userguide/
        # conditional-writes.html, read 2026-12-07. moto answers the 412, never the 409.
        ("PreconditionFailed", 412),
        ("ConditionalRequestConflict", 409),
    ],
)
def test_a_create_only_write_that_s3_refuses_answers_none(
    stubbed: tuple[S3Objects, Stubber], code: str, status: int
) -> None:
    objects, stubber = stubbed
    stubber.add_client_error(
        "put_object",
        service_error_code=code,
        service_message="At least one of the pre-conditions you specified did not hold",
        http_status_code=status,
        expected_params={
            "Bucket": BUCKET,
            "Key": "sources/state/sync.lease",
            "Body": b'{"run": "r"}',
            "ContentType": "application/json",
            "IfNoneMatch": "*",
        },
    )

    assert objects.create_json(BUCKET, "sources/state/sync.lease", {"run": "r"}) is None
