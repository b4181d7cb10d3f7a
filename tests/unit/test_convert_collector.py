"""formats.convert builds its trees with Python's cyclic garbage collector paused (issue 44:
Word conversion cost 5-14x a python-docx read, and grew faster than the file: each collection
walks every object of the trees built so far)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from docchat.ingest.formats import convert, documents
from tests import officegen

FILES = {
    "report.docx": lambda: officegen.docx_file(sections=20),
    "deck.pptx": lambda: officegen.pptx_file(slides=10),
    "book.xlsx": lambda: officegen.xlsx_file(rows=2_000),
    "page.html": lambda: officegen.html_page(sections=50),
}


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of each collection the collector runs while the test does."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


@pytest.mark.parametrize("name", list(FILES))
def test_convert_runs_no_garbage_collection_and_restores_the_collector(
    name: str, collections: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a document of each kind, with the collector on, and its converter watched
    data = FILES[name]()
    kind = name.rsplit(".", 1)[1]
    real = getattr(documents, kind)
    during: list[int] = []

    def watched(*args: Any) -> Any:
        before = len(collections)
        converted = real(*args)
        during.append(len(collections) - before)
        return converted

    monkeypatch.setattr(documents, kind, watched)
    assert gc.isenabled()

    # When it is converted
    document = convert(name, data)

    # Then its converter ran without one collection, and the collector is on again
    assert document.pages
    assert during == [0]
    assert gc.isenabled()


def test_convert_leaves_the_collector_as_it_found_it_when_a_converter_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a converter that fails
    def failing(name: str, data: bytes, limits: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(documents, "md", failing)

    # When it fails with the collector on, and again with it off
    with pytest.raises(RuntimeError):
        convert("notes.md", b"# Notes")
    on_after = gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(RuntimeError):
            convert("notes.md", b"# Notes")
        off_after = gc.isenabled()
    finally:
        gc.enable()

    # Then each time the collector is as it was before
    assert (on_after, off_after) == (True, False)
