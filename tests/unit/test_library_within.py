"""A library restricted to a reader (`Library.within`) reads only what the reader may see, even
when the library it was made from has already read every document."""

from __future__ import annotations

from pathlib import Path

from docchat.search.library import Visible
from tests.conftest import WordEmbedder
from tests.mcpkit import backend_of, ingested


def test_a_reader_does_not_get_the_catalog_the_whole_library_read_before(tmp_path: Path) -> None:
    # Given ferries and bridges in collections of their own, and the whole library's catalog
    # read first (an admin's request to a warm server)
    ids = ingested(tmp_path / "data", WordEmbedder(), own_collections=True)
    library = backend_of(tmp_path / "data", WordEmbedder()).library
    try:
        assert set(library.catalog().records) == {ids["ferries"], ids["bridges"]}

        # When a reader of ferries only asks
        reader = library.within(Visible(collections=frozenset({"ferries"})))

        # Then bridges does not exist for them: not listed, not searched
        assert set(reader.catalog().records) == {ids["ferries"]}
        found = reader.search("swing bridge tall ships", top_k=5)
        assert {p.chunk.doc_id for p in found.passages} == {ids["ferries"]}
    finally:
        library.index.close()  # type: ignore[attr-defined]
