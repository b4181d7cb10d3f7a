"""Where a same-named upload goes (ingest.uploads.placed_upload): the document of that name in
the collection, else a new document's slot; never one moved out of the collection."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from docchat.errors import AccessDeniedError, UploadError
from docchat.ingest.uploads import UPLOAD_SLOTS, placed_upload, upload_key, upload_path
from docchat.models import DocumentRecord
from docchat.serve.access import Access


def _record(*collections: str) -> DocumentRecord:
    return DocumentRecord(
        doc_id="d", source="s", title="t", version="v", collections=list(collections)
    )


def _placed(documents: dict[int, DocumentRecord], writer: Access) -> PurePosixPath:
    slots = {upload_path("budget.pdf", slot): record for slot, record in documents.items()}
    return placed_upload("budget.pdf", "ferries", document_at=slots.get, writer=writer)


ANA = Access(user="ana", read=frozenset({"ferries"}), write=frozenset({"ferries"}))


def test_placed_upload_is_the_next_version_of_the_document_in_the_collection() -> None:
    assert _placed({0: _record("bridges"), 1: _record("ferries")}, ANA) == upload_path(
        "budget.pdf", 1
    )
    assert upload_path("budget.pdf", 1).parent.name == f"{upload_key('budget.pdf')}-2"


def test_placed_upload_beside_a_document_moved_out_takes_the_first_free_slot() -> None:
    moved = {0: _record("bridges"), 2: _record("bridges")}
    assert _placed(moved, ANA) == upload_path("budget.pdf", 1)


def test_placed_upload_refuses_a_document_also_in_a_collection_the_writer_may_not_write() -> None:
    reader = Access(user="ana", read=frozenset({"ferries", "ports"}), write=frozenset({"ferries"}))
    with pytest.raises(AccessDeniedError) as refused:
        _placed({0: _record("bridges", "ferries", "ports")}, reader)
    message = str(refused.value)
    assert "'ports' and a collection you cannot see" in message
    assert "bridges" not in message


def test_placed_upload_says_when_every_slot_holds_a_moved_document() -> None:
    with pytest.raises(UploadError, match="upload this file under another name"):
        _placed(dict.fromkeys(range(UPLOAD_SLOTS), _record("bridges")), ANA)
