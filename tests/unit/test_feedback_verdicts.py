"""How `docchat eval feedback` judges a rated answer asked again (evaluate/feedback.py)."""

from __future__ import annotations

import pytest

from docchat.evaluate.feedback import verdict

P1, P2, P3 = ("a", 1), ("a", 2), ("b", 1)


@pytest.mark.parametrize(
    ("rating", "before", "now", "expected"),
    [
        ("up", {P1, P2}, {P1, P2, P3}, "kept"),  # every page it cited is cited again
        ("up", {P1, P2}, {P1}, "lost"),  # one of them is not
        ("up", set(), set(), "kept"),  # a right "nothing matches" stays one
        ("up", set(), {P1}, "lost"),  # and is lost when the answer now cites something
        ("down", {P1}, {P1, P3}, "others"),  # a page it did not cite
        ("down", {P1, P2}, {P1}, "same"),  # only what it cited before
        ("down", {P1}, set(), "same"),  # nothing: not another passage
        ("down", set(), {P3}, "others"),  # a "nothing matches" marked bad now cites one
    ],
)
def test_a_rated_answer_asked_again_is_judged_by_its_cited_pages(
    rating: str, before: set[tuple[str, int]], now: set[tuple[str, int]], expected: str
) -> None:
    assert verdict(rating, frozenset(before), frozenset(now)) == expected
