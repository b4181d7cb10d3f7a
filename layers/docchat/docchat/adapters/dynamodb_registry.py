"""The document registry in DynamoDB (the cloud's DocumentCatalog): one item per document,
written with conditions so that duplicate or out-of-order events cannot move a document
backwards."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from docchat.errors import StaleWriteError
from docchat.models import DocStatus, DocumentRecord, RegistryEntry


class DynamoRegistry:
    def __init__(self, table: Any) -> None:
        self._table = table  # a boto3 DynamoDB Table resource

    def get(self, doc_id: str) -> RegistryEntry | None:
        """The document's entry, read strongly consistent (steps decide on it)."""
        item: dict[str, Any] | None = self._table.get_item(
            Key={"doc_id": doc_id}, ConsistentRead=True
        ).get("Item")
        return _entry(item) if item else None

    @property
    def read_only(self) -> bool:
        return False

    def revision(self) -> int | None:
        """None: DynamoDB cannot say when a record changed, so every chat reads it again."""
        return None

    def document(self, doc_id: str) -> DocumentRecord | None:
        return self.get(doc_id)

    def unfinished(self) -> list[DocumentRecord]:
        """Documents whose ingestion started and has not ended (INDEXED or FAILED)."""
        done = (DocStatus.INDEXED, DocStatus.FAILED)
        return [r for r in self.documents() if r.status not in done]

    def indexed_version(self, version: str) -> DocumentRecord | None:
        """An indexed document whose content is exactly this version, if there is one."""
        indexed = (r for r in self.documents() if r.status == DocStatus.INDEXED)
        return next((r for r in indexed if r.version == version), None)

    def set_record(self, record: DocumentRecord) -> None:
        """Write the document's record fields as given, unconditionally (the pipeline's own
        writes go through `claim` and `update`, which order runs); the rest of its item (the
        run that claimed it) stays."""
        fields = {**record.model_dump(mode="json"), "updated_at": _now()}
        fields.pop("doc_id")
        fields = _decimalless(fields)
        self._table.update_item(
            Key={"doc_id": record.doc_id},
            UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in fields),
            ExpressionAttributeNames={f"#{k}": k for k in fields},
            ExpressionAttributeValues={f":{k}": v for k, v in fields.items()},
        )

    def forget(self, doc_id: str) -> None:
        """Remove the document's record, whatever run claimed it (`delete` is the pipeline's,
        ordered by the S3 event's sequencer)."""
        self._table.delete_item(Key={"doc_id": doc_id})

    def documents(self) -> list[DocumentRecord]:
        """Every document; read strongly consistent, as chats see only what this lists INDEXED."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"ConsistentRead": True}
        while True:
            page = self._table.scan(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return sorted((_record(i) for i in items), key=lambda r: r.source)

    def claim(self, record: DocumentRecord, *, sequencer: str, execution_id: str) -> None:
        """Start ingesting `record.version` unless a newer S3 event claimed the document."""
        item = {**record.model_dump(mode="json"), "updated_at": _now()}
        item.update(sequencer=sequencer, execution_id=execution_id)
        try:
            self._table.put_item(
                Item=_decimalless(item),
                ConditionExpression="attribute_not_exists(doc_id) OR sequencer <= :seq",
                ExpressionAttributeValues={":seq": sequencer},
            )
        except self._table.meta.client.exceptions.ConditionalCheckFailedException as exc:
            raise StaleWriteError(record.doc_id) from exc

    def update(self, doc_id: str, version: str, **fields: Any) -> None:
        """Update fields of the document if `version` is still the one being ingested."""
        fields["updated_at"] = _now()
        names = {f"#{k}": k for k in fields}
        values = {f":{k}": _plain(v) for k, v in fields.items()}
        values[":version"] = version
        try:
            self._table.update_item(
                Key={"doc_id": doc_id},
                UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in fields),
                ConditionExpression="attribute_exists(doc_id) AND version = :version",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except self._table.meta.client.exceptions.ConditionalCheckFailedException as exc:
            raise StaleWriteError(doc_id) from exc

    def fail_if_running(self, doc_id: str, execution_id: str, *, code: str, reason: str) -> bool:
        """Mark a document FAILED if `execution_id` still owns an unfinished ingestion of it."""
        try:
            self._table.update_item(
                Key={"doc_id": doc_id},
                UpdateExpression="SET #s = :failed, error_code = :code, #e = :reason, "
                "updated_at = :now",
                ConditionExpression="execution_id = :run AND NOT #s IN (:indexed, :failed)",
                ExpressionAttributeNames={"#s": "status", "#e": "error"},
                ExpressionAttributeValues={
                    ":failed": DocStatus.FAILED.value,
                    ":indexed": DocStatus.INDEXED.value,
                    ":code": code,
                    ":reason": reason,
                    ":run": execution_id,
                    ":now": _now(),
                },
            )
        except self._table.meta.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def delete(self, doc_id: str, *, sequencer: str) -> bool:
        """Forget a document, unless an event newer than the deletion claimed it since."""
        try:
            self._table.delete_item(
                Key={"doc_id": doc_id},
                ConditionExpression="attribute_not_exists(doc_id) OR sequencer <= :seq",
                ExpressionAttributeValues={":seq": sequencer},
            )
        except self._table.meta.client.exceptions.ConditionalCheckFailedException:
            return False
        return True


def _now() -> int:
    return int(time.time())


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, DocStatus) else value


def _decimalless(item: dict[str, Any]) -> dict[str, Any]:
    """DynamoDB numbers must not be floats: store whole seconds and integers."""
    return {k: int(v) if isinstance(v, float) else v for k, v in item.items()}


def _record(item: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord.model_validate(_values(item, DocumentRecord.model_fields))


def _entry(item: dict[str, Any]) -> RegistryEntry:
    return RegistryEntry.model_validate(_values(item, RegistryEntry.model_fields))


def _values(item: dict[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """The item's attributes that are model fields, DynamoDB's Decimals made plain numbers."""
    values = {k: item[k] for k in fields if k in item}
    for key in ("pages", "pages_without_text", "pages_ocr", "chunks"):
        if key in values:
            values[key] = int(values[key])
    if "updated_at" in values:
        values["updated_at"] = float(values["updated_at"])
    return values
