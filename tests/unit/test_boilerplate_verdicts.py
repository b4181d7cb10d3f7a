"""A sentence's boilerplate verdict is two index reads, and every search asks it of the
passages it lists (docchat.search.boilerplate): kept per shelf, a search asked again reads the
index for its own passages only, and a shelf that changed judges again."""

from __future__ import annotations

from typing import Any

import pytest

from docchat.search.boilerplate import Verdicts, boilerplate
from docchat.search.library import Library
from tests.unit.test_shelf import CERTIFICATION, SHELF, filed

QUESTION = "What were 3M's capital expenditures in 2022?"


class Counted:
    """The index, counting its keyword searches."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.keyword_searches = 0

    def keyword_search(self, *args: Any, **kwargs: Any) -> list[tuple[str, float]]:
        self.keyword_searches += 1
        found: list[tuple[str, float]] = self.index.keyword_search(*args, **kwargs)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)


@pytest.fixture
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return filed(tmp_path_factory.mktemp("verdicts"), SHELF)


def test_a_search_asked_again_reads_no_verdict_from_the_index(shelf: Library) -> None:
    counted = Counted(shelf.index)
    shelf.index = counted
    first = shelf.search(QUESTION, top_k=5)
    once = counted.keyword_searches

    again = shelf.search(QUESTION, top_k=5)

    assert [p.chunk.chunk_id for p in again.passages] == [p.chunk.chunk_id for p in first.passages]
    # the second search makes its own keyword search, and none to judge its passages again
    assert counted.keyword_searches - once < once, (once, counted.keyword_searches)


def test_a_shelf_that_changed_judges_again(shelf: Library) -> None:
    counted = Counted(shelf.index)
    kept = Verdicts()
    versions = dict(shelf.catalog().versions())
    assert boilerplate(counted, versions, [CERTIFICATION], kept=kept) == {CERTIFICATION}
    asked = counted.keyword_searches
    assert boilerplate(counted, versions, [CERTIFICATION], kept=kept) == {CERTIFICATION}
    assert counted.keyword_searches == asked

    # When one document leaves the shelf
    fewer = dict(list(versions.items())[1:])
    boilerplate(counted, fewer, [CERTIFICATION], kept=kept)

    # Then the sentence is judged again among those left
    assert counted.keyword_searches == asked + 1
