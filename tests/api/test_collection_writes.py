"""Writes that land on an existing document respect every collection it is in (issue 40):
the re-upload matrix of tests/api/rewritekit.py through the local server with a users file and
through the cloud app over moto behind the Cognito stand-in."""

from __future__ import annotations

import hashlib

import boto3
import httpx

from docchat.ingest.decision import doc_id_for
from docchat.models import DocStatus, DocumentRecord, collection_of_key
from tests.api.rewritekit import Rewrites
from tests.api.test_collections import ANA, BO, CY, ROOT, Local, local
from tests.api.test_collections_cloud import DOCS, REGION, Cloud, cloud

__all__ = ["cloud", "local"]  # the fixtures


def test_a_same_named_upload_respects_every_collection_locally(local: Local) -> None:
    def upload(user: dict[str, str], name: str, collection: str, data: bytes) -> httpx.Response:
        return local.call(
            "POST",
            f"/documents?filename={name}&collection={collection}",
            user,
            content=data,
            headers={"content-type": "application/pdf"},
        )

    Rewrites(local.call, upload, ANA, BO, CY, ROOT).run()


def test_a_same_named_upload_respects_every_collection_in_the_cloud(cloud: Cloud) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    table = boto3.resource("dynamodb", region_name=REGION).Table("docchat-documents")

    def upload(user: str, name: str, collection: str, data: bytes) -> httpx.Response:
        """The page's upload: a ticket, the PUT to S3, and what Register then writes (a new
        key's document in the key's collection; an existing one keeps its collections)."""
        body = {"filename": name, "size": len(data), "collection": collection}
        ticket = cloud.call("POST", "/documents/upload-url", user, json=body)
        if ticket.status_code != 200:
            return ticket
        key, doc_id = ticket.json()["key"], ticket.json()["doc_id"]
        assert doc_id == doc_id_for(f"{DOCS}/{key}")
        s3.put_object(Bucket=DOCS, Key=key, Body=data)
        version = hashlib.sha256(data).hexdigest()
        current = table.get_item(Key={"doc_id": doc_id}).get("Item")
        if current is not None:
            table.update_item(
                Key={"doc_id": doc_id},
                UpdateExpression="SET version = :v",
                ExpressionAttributeValues={":v": version},
            )
            return ticket
        record = DocumentRecord(
            doc_id=doc_id,
            source=f"{DOCS}/{key}",
            title=name.removesuffix(".pdf"),
            version=version,
            status=DocStatus.INDEXED,
            collections=[collection_of_key(key)],
        )
        item = {**record.model_dump(mode="json"), "updated_at": 1, "sequencer": "01"}
        table.put_item(Item={**item, "execution_id": "", "index": ""})
        return ticket

    Rewrites(cloud.call, upload, "ana", "bo", "cy", "root").run()
