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
        try:
            body = self._s3.get_object(Bucket=bucket, Key=key)["Body"]
        except self._s3.exceptions.NoSuchKey as exc:
            raise ObjectMissingError(f"s3://{bucket}/{key} no longer exists") from exc
        data: bytes = body.read()
        return data

    def sha256(self, bucket: str, key: str) -> str:
        """The object's content hash, streamed so a large PDF never sits in memory twice."""
        try:
            body = self._s3.get_object(Bucket=bucket, Key=key)["Body"]
        except self._s3.exceptions.NoSuchKey as exc:
            raise ObjectMissingError(f"s3://{bucket}/{key} no longer exists") from exc
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

    def exists(self, bucket: str, key: str) -> bool:
        try:
            self._s3.head_object(Bucket=bucket, Key=key)
        except self._s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True
