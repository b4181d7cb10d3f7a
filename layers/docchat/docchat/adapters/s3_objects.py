"""Objects in S3: the uploaded PDFs and the pipeline's intermediate files."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from botocore.exceptions import ClientError

from docchat.errors import ObjectAccessDeniedError, ObjectMissingError
from docchat.ports import Vectors

_CHUNK = 1 << 20
# GetObject answers a missing key with NoSuchKey; HeadObject has no body, so only its status.
_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})
_DENIED = frozenset({"AccessDenied", "403", "Forbidden"})
#: A conditional request whose condition did not hold (412), whose object is gone (If-Match on
#: a missing key: 404), or that raced another conditional write (409): S3 user guide, "How to
#: prevent object overwrites with conditional writes" (read 2026-12-07).
_NOT_AS_EXPECTED = frozenset(
    {"PreconditionFailed", "412", "ConditionalRequestConflict", "409", *_MISSING}
)


class S3Objects:
    """Reads and writes through one boto3 S3 client, created on first use and reused."""

    def __init__(self, client: Any) -> None:
        self._s3 = client

    def exists(self, bucket: str, key: str) -> bool:
        """Whether the key has a current object (not deleted, not behind a delete marker)."""
        try:
            self._s3.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return False
            raise _translated(exc, bucket, key) from exc
        return True

    def read(self, bucket: str, key: str) -> bytes:
        data: bytes = self._body(bucket, key).read()
        return data

    def sha256(self, bucket: str, key: str) -> str:
        """The object's content hash, streamed so a large PDF never sits in memory twice."""
        body = self._body(bucket, key)
        digest = hashlib.sha256()
        for part in iter(lambda: body.read(_CHUNK), b""):
            digest.update(part)
        return digest.hexdigest()

    def metadata(self, bucket: str, key: str) -> dict[str, str]:
        """The object's user metadata (HeadObject's `Metadata`); a missing object raises
        `ObjectMissingError`."""
        try:
            answer = self._s3.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                raise ObjectMissingError(f"s3://{bucket}/{key} no longer exists") from exc
            raise _translated(exc, bucket, key) from exc
        return {str(k): str(v) for k, v in answer.get("Metadata", {}).items()}

    def write_json(self, bucket: str, key: str, value: Any) -> None:
        body = json.dumps(value, ensure_ascii=False).encode()
        self._s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")

    def write_bytes(
        self, bucket: str, key: str, data: bytes, *, metadata: Mapping[str, str]
    ) -> None:
        """Write `data` whole under `key`, with `metadata` as the object's user metadata."""
        self._s3.put_object(Bucket=bucket, Key=key, Body=data, Metadata=dict(metadata))

    def create_json(self, bucket: str, key: str, value: Any) -> str | None:
        """Write `value` only if `key` has no object (If-None-Match: *): its ETag, or None when
        S3 answers that one exists (412) or another conditional write raced this one (409)."""
        body = json.dumps(value, ensure_ascii=False).encode()
        return self._conditional_put(bucket, key, body, IfNoneMatch="*")

    def read_tagged(self, bucket: str, key: str) -> tuple[bytes, str]:
        try:
            answer = self._s3.get_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                raise ObjectMissingError(f"s3://{bucket}/{key} no longer exists") from exc
            raise _translated(exc, bucket, key) from exc
        data: bytes = answer["Body"].read()
        return data, str(answer["ETag"])

    def replace_json(self, bucket: str, key: str, value: Any, *, etag: str) -> str | None:
        """Write `value` only if the object is still the one tagged `etag` (If-Match): the new
        ETag, or None when it changed (412), is gone (404) or another write raced (409)."""
        body = json.dumps(value, ensure_ascii=False).encode()
        return self._conditional_put(bucket, key, body, IfMatch=etag)

    def delete_if(self, bucket: str, key: str, *, etag: str) -> bool:
        """Delete the object only if it is still the one tagged `etag` (If-Match)."""
        try:
            self._s3.delete_object(Bucket=bucket, Key=key, IfMatch=etag)
        except ClientError as exc:
            if _code(exc) in _NOT_AS_EXPECTED:
                return False
            raise _translated(exc, bucket, key) from exc
        return True

    def _conditional_put(self, bucket: str, key: str, body: bytes, **condition: str) -> str | None:
        try:
            answer = self._s3.put_object(
                Bucket=bucket, Key=key, Body=body, ContentType="application/json", **condition
            )
        except ClientError as exc:
            if _code(exc) in _NOT_AS_EXPECTED:
                return None
            raise _translated(exc, bucket, key) from exc
        return str(answer["ETag"])

    def read_json(self, bucket: str, key: str) -> Any:
        return json.loads(self.read(bucket, key))

    def write_vectors(self, bucket: str, key: str, vectors: Vectors) -> None:
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(vectors, dtype=np.float32), allow_pickle=False)
        self._s3.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())

    def delete(self, bucket: str, key: str) -> None:
        """Delete the object; S3 answers a missing key with success too."""
        try:
            self._s3.delete_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            raise _translated(exc, bucket, key) from exc

    def keys(self, bucket: str, prefix: str) -> list[str]:
        """The keys under `prefix` (ListObjectsV2, every page)."""
        found: list[str] = []
        try:
            for page in self._s3.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=prefix
            ):
                found += [item["Key"] for item in page.get("Contents", [])]
        except ClientError as exc:
            raise _translated(exc, bucket, prefix) from exc
        return found

    def read_vectors(self, bucket: str, key: str) -> Vectors:
        vectors: Vectors = np.load(io.BytesIO(self.read(bucket, key)), allow_pickle=False)
        return vectors

    def _body(self, bucket: str, key: str) -> Any:
        """The object's streaming body; a missing object raises `ObjectMissingError`."""
        try:
            return self._s3.get_object(Bucket=bucket, Key=key)["Body"]
        except ClientError as exc:
            if _code(exc) in _MISSING:
                raise ObjectMissingError(f"s3://{bucket}/{key} no longer exists") from exc
            raise _translated(exc, bucket, key) from exc


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _translated(exc: ClientError, bucket: str, key: str) -> Exception:
    """A 403 becomes `ObjectAccessDeniedError`; other errors stay as they are.

    Without s3:ListBucket on the bucket S3 answers 403 instead of 404 for a missing key, so a
    403 cannot be read as "deleted": it says which permissions to check instead.
    https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html (Permissions)
    """
    if _code(exc) not in _DENIED:
        unchanged: Exception = exc
        return unchanged
    return ObjectAccessDeniedError(
        f"S3 denied reading s3://{bucket}/{key} (403): allow s3:GetObject on the object and "
        f"s3:ListBucket on the bucket {bucket} to this function's role (without ListBucket S3 "
        "answers 403 for a key that does not exist)"
    )
