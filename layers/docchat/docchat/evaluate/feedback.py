"""What `docchat eval feedback` measures: the team's rated answers asked again of today's code
and index, judged by the passages the new answers cite.

A passage is a cited page of a document (doc_id, page). An answer marked good *keeps* its
passages when the new answer cites every page the rated one cited (an uncited good answer, such
as a right "nothing matches", keeps when the new one cites nothing either). An answer marked bad
*cites others* when the new answer cites a page the rated one did not. Each question is asked as
it was: after the turns before it, in its scope, as its user (with a users file) or as the data
directory's admin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from docchat.evaluate.lines import json_lines
from docchat.llm import Message
from docchat.models import Citation, DocumentRecord, RatedQuestion
from docchat.search.library import Visible

Passage = tuple[str, int]
#: What became of a rated answer asked again: a good one kept its passages or lost some, a bad
#: one cites others or still the same; or it could not be asked (its user is not in the users
#: file).
Verdict = Literal["kept", "lost", "others", "same", "not asked"]


@dataclass(frozen=True)
class Outcome:
    question: RatedQuestion
    before: frozenset[Passage]
    now: frozenset[Passage]
    verdict: Verdict
    # The cited documents replaced (another version) or removed since the rating.
    changed: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True)
class FeedbackScores:
    good: int
    kept: int
    bad: int
    others: int
    not_asked: int


#: Asks one question after its turns, over what `visible` admits: the new answer's citations.
Ask = Callable[[Sequence[Message], Visible, list[str] | None], list[Citation]]
#: What a rated question may read now: its scope, within what its user may read (None: the
#: user is unknown now).
VisibleOf = Callable[[RatedQuestion], Visible | None]


def passages(citations: Iterable[Citation]) -> frozenset[Passage]:
    return frozenset((c.doc_id, c.page) for c in citations)


def verdict(rating: str, before: frozenset[Passage], now: frozenset[Passage]) -> Verdict:
    if rating == "up":
        keeps = before <= now if before else not now
        return "kept" if keeps else "lost"
    return "others" if now - before else "same"


def evaluate_feedback(
    questions: Iterable[RatedQuestion],
    ask: Ask,
    visible_of: VisibleOf,
    document: Callable[[str], DocumentRecord | None],
) -> Iterator[Outcome]:
    """Each rated question asked again, in order."""
    for q in questions:
        before = passages(q.citations)
        changed = tuple(
            doc_id
            for doc_id in dict.fromkeys(c.doc_id for c in q.citations)
            if _changed(document(doc_id), q.feedback.versions.get(doc_id))
        )
        seen = visible_of(q)
        if seen is None:
            why = f"its user {q.user!r} is not in the users file"
            yield Outcome(q, before, frozenset(), "not asked", changed, why)
            continue
        turns: list[Message] = [{"role": t.role, "content": t.content} for t in q.history]
        turns.append({"role": "user", "content": q.question})
        now = passages(ask(turns, seen, q.scope.doc_ids if q.scope else None))
        yield Outcome(q, before, now, verdict(q.feedback.rating, before, now), changed)


def scores(outcomes: Sequence[Outcome]) -> FeedbackScores:
    asked = [o for o in outcomes if o.verdict != "not asked"]
    return FeedbackScores(
        good=sum(o.question.feedback.rating == "up" for o in asked),
        kept=sum(o.verdict == "kept" for o in asked),
        bad=sum(o.question.feedback.rating == "down" for o in asked),
        others=sum(o.verdict == "others" for o in asked),
        not_asked=len(outcomes) - len(asked),
    )


def load_rated(path: Path) -> list[RatedQuestion]:
    """A question set exported by `docchat feedback export` (JSON lines), or
    EvaluationDataError naming the first line that is not one (as `load_pages`)."""
    return json_lines(
        path, RatedQuestion, what="a rated answer as `docchat feedback export` writes them"
    )


def _changed(record: DocumentRecord | None, version: str | None) -> bool:
    if record is None:
        return True
    return version is not None and record.version != version
