"""Lists an extractive answer quotes whole: the items after a sentence that announces them ("the
following four conditions")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from docchat.search.sentences import Span

# A sentence that announces a list ("the following four conditions"); its items, at most
# LIST_ITEMS, are quoted after it.
ANNOUNCES = re.compile(r"(?i)\bfollowing\b|:$")
LIST_ITEMS = 8
_COUNTS = ("one", "two", "three", "four", "five", "six", "seven", "eight")
_COUNT = re.compile(rf"(?i)\bfollowing ({'|'.join(_COUNTS)})\b")


def list_after(candidates: Sequence[tuple[int, Span]], k: int) -> list[tuple[int, Span]]:
    """The list items that follow candidate `k` in its chunk ("1. …", "2. …", or "• …"), of
    the kind of the first, as many as the lead-in counts ("the following four conditions");
    sentences between items (an item's own sub-items and notes) are passed over, and the list
    ends where prose goes on for more than three sentences."""
    _, lead = candidates[k]
    counted = _COUNT.search(lead.text)
    wanted = _COUNTS.index(counted.group(1).casefold()) + 1 if counted else LIST_ITEMS
    items: list[tuple[int, Span]] = []
    kind = ""
    between = 0
    for number, span in candidates[k + 1 :]:
        if span.chunk is not lead.chunk:
            break
        if not span.list_item:
            between += 1
            if not items or between > 3:
                break
            continue
        mark = _item_kind(span.text)
        kind = kind or mark
        if mark == kind:
            items.append((number, span))
            between = 0
            if len(items) == wanted:
                break
    return items


def _item_kind(text: str) -> str:
    head = text.split(maxsplit=1)[0]
    return "number" if head[:1].isdigit() else "letter" if head[:1].isalpha() else "bullet"
