"""Objects in S3: the uploaded PDFs and the pipeline's intermediate files."""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import numpy as np

from docchat.embed import Vectors
from docchat.errors import ObjectMissingError

_CHUNK = 1 << 20


class S3Objects:
    """Reads and writes through one boto3 S3 client, created on first use and reused."""

    def __init__(self, client: Any) -> None:
        self._s3 = client

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

    def write_json(self, bucket: str, key: str, value: Any) -> None:
        body = json.dumps(value, ensure_ascii=False).encode()
        self._s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")

    def read_json(self, bucket: str, key: str) -> Any:
        return json.loads(self.read(bucket, key))

    def write_vectors(self, bucket: str, key: str, vectors: Vectors) -> None:
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(vectors, dtype=np.float32), allow_pickle=False)
        self._s3.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())

    def read_vectors(self, bucket: str, key: str) -> Vectors:
        vectors: Vectors = np.load(io.BytesIO(self.read(bucket, key)), allow_pickle=False)
        return vectors

    def _body(self, bucket: str, key: str) -> Any:
        """The object's streaming body; a missing object raises `ObjectMissingError`."""
        try:
            return self._s3.get_object(Bucket=bucket, Key=key)["Body"]
        except self._s3.exceptions.NoSuchKey as exc:
            raise ObjectMissingError(f"s3://{bucket}/{key} no longer exists") from exc
