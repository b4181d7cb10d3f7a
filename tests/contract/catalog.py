"""What every ports.DocumentCatalog does, as a mixin: a test class runs it by inheriting it
and defining the `catalog` fixture (an empty catalog).

`TELLS_REVISIONS`: whether `revision()` says when a record changed (SQLite) or None (DynamoDB:
every chat reads the catalog again). Either way a reader never sees a stale record.
"""

from __future__ import annotations

from docchat.models import DocStatus, DocumentRecord
from docchat.ports import DocumentCatalog


def record_of(doc_id: str, version: str = "v1", **fields: object) -> DocumentRecord:
    return DocumentRecord(
        doc_id=doc_id,
        source=f"/docs/{doc_id}.pdf",
        title=doc_id.title(),
        version=version,
        **fields,  # type: ignore[arg-type]
    )


class DocumentCatalogContract:
    TELLS_REVISIONS: bool

    def test_catalog_reads_back_a_record_it_was_given(self, catalog: DocumentCatalog) -> None:
        record = record_of("ferry", status=DocStatus.INDEXED, pages=3, chunks=7)

        catalog.set_record(record)

        found = catalog.document("ferry")
        assert found is not None
        # A record as given (a registry's entry may say more: which run claimed it)
        fields = set(DocumentRecord.model_fields) - {"updated_at"}
        assert found.model_dump(include=fields) == record.model_dump(include=fields)
        assert catalog.document("bridge") is None

    def test_catalog_lists_every_document(self, catalog: DocumentCatalog) -> None:
        for doc_id in ("ferry", "bridge", "tunnel"):
            catalog.set_record(record_of(doc_id))

        assert sorted(r.doc_id for r in catalog.documents()) == ["bridge", "ferry", "tunnel"]

    def test_catalog_keeps_collections(self, catalog: DocumentCatalog) -> None:
        catalog.set_record(record_of("ferry", collections=["finance", "legal"]))
        catalog.set_record(record_of("bridge"))

        assert catalog.document("ferry").collections == ["finance", "legal"]  # type: ignore[union-attr]
        assert catalog.document("bridge").collections == ["default"]  # type: ignore[union-attr]

    def test_catalog_moves_a_document_by_writing_its_record(self, catalog: DocumentCatalog) -> None:
        catalog.set_record(record_of("ferry", collections=["finance"]))
        moved = catalog.document("ferry").model_copy(update={"collections": ["legal"]})  # type: ignore[union-attr]

        catalog.set_record(moved)

        assert [r.collections for r in catalog.documents()] == [["legal"]]

    def test_catalog_finds_an_indexed_version(self, catalog: DocumentCatalog) -> None:
        catalog.set_record(record_of("ferry", "hash-1", status=DocStatus.INDEXED))
        catalog.set_record(record_of("bridge", "hash-2", status=DocStatus.CONVERTING))

        assert catalog.indexed_version("hash-1").doc_id == "ferry"  # type: ignore[union-attr]
        assert catalog.indexed_version("hash-2") is None  # not indexed (yet)
        assert catalog.indexed_version("hash-3") is None

    def test_catalog_lists_unfinished_documents(self, catalog: DocumentCatalog) -> None:
        catalog.set_record(record_of("ferry", status=DocStatus.INDEXED))
        catalog.set_record(record_of("bridge", status=DocStatus.FAILED))
        catalog.set_record(record_of("tunnel", status=DocStatus.EMBEDDING))

        assert [r.doc_id for r in catalog.unfinished()] == ["tunnel"]

    def test_catalog_tells_that_it_changed(self, catalog: DocumentCatalog) -> None:
        catalog.set_record(record_of("ferry"))
        before = catalog.revision()

        catalog.set_record(record_of("ferry", status=DocStatus.INDEXED))

        after = catalog.revision()
        if not self.TELLS_REVISIONS:
            assert (before, after) == (None, None)
            return
        assert before is not None and after is not None and after != before

    def test_catalog_is_writable(self, catalog: DocumentCatalog) -> None:
        assert catalog.read_only is False

    def test_catalog_forgets_a_document(self, catalog: DocumentCatalog) -> None:
        catalog.set_record(record_of("ferry", status=DocStatus.INDEXED))
        catalog.set_record(record_of("bridge", status=DocStatus.INDEXED))

        catalog.forget("ferry")
        catalog.forget("tunnel")  # never there: nothing to do

        assert catalog.document("ferry") is None
        assert [r.doc_id for r in catalog.documents()] == ["bridge"]
