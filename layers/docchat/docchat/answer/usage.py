"""What each answer used, kept per user and collection (issue 46): locally in the data
directory (`docchat usage` sums it), on the stack as CloudWatch metrics.

An answer is put down to the collections of the documents it cited (one that cited none: the
collections the caller could read in it, those asked about or else all of theirs; an admin's
unscoped question that cited none: "-"); one that cited several is put down to them together,
"finance+legal", so that every sum over the rows is the whole cost, counted once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from docchat.answer.events import ChatEvent, CitationsEvent, DoneEvent, Usage
from docchat.errors import DocchatError
from docchat.models import DocumentRecord

logger = logging.getLogger(__name__)
NO_COLLECTION = "-"


@dataclass(frozen=True)
class Spent:
    """One answer's usage, by whom and for which collections."""

    at: datetime
    user: str
    collection: str
    model: str
    usage: Usage


class UsageLedger(Protocol):
    """Where answers' usage is kept (a narrow port beside its only user): the data
    directory's usage file (adapters/sqlite_usage.py), CloudWatch (adapters/emf_usage.py)."""

    def record(self, spent: Spent) -> None: ...


def collection_of(records: Iterable[DocumentRecord | None], scope: Sequence[str] = ()) -> str:
    """The collection(s) an answer is put down to (see the module's docstring)."""
    named = {c for record in records if record is not None for c in record.collections}
    return "+".join(sorted(named or set(scope))) or NO_COLLECTION


def metered(
    events: Iterator[ChatEvent],
    ledger: Callable[[], UsageLedger],
    *,
    user: str,
    model: str,
    document: Callable[[str], DocumentRecord | None],
    scope: Sequence[str] = (),
) -> Iterator[ChatEvent]:
    """`events` unchanged; once they end with `done`, the answer's usage is kept in `ledger()`.
    A ledger that cannot be opened or cannot keep it (a read-only data directory, a full disk)
    costs the answer nothing: that is logged."""
    cited: list[str] = []
    for event in events:
        if isinstance(event, CitationsEvent):
            cited = list(dict.fromkeys(c.doc_id for c in event.citations))
        yield event
        if isinstance(event, DoneEvent):
            spent = Spent(
                at=datetime.now(UTC),
                user=user,
                collection=collection_of((document(d) for d in cited), scope),
                model=model,
                usage=event.usage,
            )
            try:
                ledger().record(spent)
            except DocchatError as exc:
                logger.warning("usage not kept", extra={"reason": str(exc)})
