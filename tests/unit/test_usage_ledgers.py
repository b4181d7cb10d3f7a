"""Where answers' usage goes (issue 46): who it is put down to, the EMF record CloudWatch reads
on the stack, and the local file's sums."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from docchat.adapters.emf_usage import EmfUsage
from docchat.adapters.sqlite_usage import SqliteUsage
from docchat.answer.events import Usage
from docchat.answer.usage import Spent, collection_of
from docchat.models import DocumentRecord


def _record(doc_id: str, *collections: str) -> DocumentRecord:
    return DocumentRecord(doc_id=doc_id, source=f"/{doc_id}.pdf", collections=list(collections))


def _spent(user: str, collection: str, cost: float | None, day: int = 5) -> Spent:
    usage = Usage(input_tokens=100, output_tokens=10, cache_read_tokens=40, cost_usd=cost)
    return Spent(datetime(2026, 12, day, 9, tzinfo=UTC), user, collection, "m", usage)


def test_an_answer_goes_down_to_what_it_cited_else_to_what_could_be_read() -> None:
    cited = [_record("a", "finance"), _record("b", "legal", "finance"), None]
    assert collection_of(cited) == "finance+legal"
    assert collection_of([], ["ferries"]) == "ferries"
    assert collection_of([_record("a", "finance")], ["ferries"]) == "finance"
    assert collection_of([]) == "-"


def test_the_emf_record_is_what_cloudwatch_reads(capsys: pytest.CaptureFixture[str]) -> None:
    EmfUsage().record(_spent("ana", "finance", 0.0123))
    EmfUsage().record(_spent("bo", "legal", None))

    first, second = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    # The embedded metric format's root: _aws with the namespace, dimension sets and metrics
    (directive,) = first["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "docchat"
    assert sorted(directive["Dimensions"][0]) == ["collection", "service", "user"]
    names = {m["Name"] for m in directive["Metrics"]}
    assert names == {
        "Answers",
        "InputTokens",
        "OutputTokens",
        "CacheReadTokens",
        "CacheWriteTokens",
        "RerankSearchUnits",
        "CostUSD",
    }
    assert (first["user"], first["collection"], first["service"]) == ("ana", "finance", "chat")
    assert first["CostUSD"] == [0.0123] and first["InputTokens"] == [100.0]
    # An unpriced answer has no cost metric (not a zero that would pull averages down)
    assert "CostUSD" not in second and second["user"] == "bo"


def test_the_local_file_sums_by_day_user_and_collection(tmp_path: Path) -> None:
    ledger = SqliteUsage(tmp_path / "usage.sqlite3")
    ledger.record(_spent("ana", "finance", 0.01, day=4))
    ledger.record(_spent("ana", "finance", 0.02))
    ledger.record(_spent("bo", "legal", None))

    by_day = ledger.totals("day")
    assert [(t.key, t.answers, t.cost_usd, t.unpriced) for t in by_day] == [
        ("2026-12-04", 1, 0.01, 0),
        ("2026-12-05", 2, 0.02, 1),
    ]
    assert [(t.key, t.answers) for t in ledger.totals("user")] == [("ana", 2), ("bo", 1)]
    assert [t.key for t in ledger.totals("collection", since=date(2026, 12, 5))] == [
        "finance",
        "legal",
    ]
    (ana,) = ledger.totals("collection", user="ana")
    assert (ana.input_tokens, ana.output_tokens, ana.cache_read_tokens) == (200, 20, 80)
    ledger.close()
