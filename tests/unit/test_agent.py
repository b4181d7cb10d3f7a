"""The agent's tool loop with a scripted model: event order, guards, citations, errors."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from docchat.answer.agent import Agent, ExtractiveAnswerer
from docchat.answer.events import ChatEvent, event_data
from docchat.answer.tools import WAKING
from docchat.errors import SearchIndexUnavailableError
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.models import Chunk, Passage
from docchat.search.library import Library, SearchResult
from tests.chatkit import ScriptedModel, library, tuned_config

__all__ = ["library"]  # the fixture


def _types(events: list[ChatEvent]) -> list[str]:
    return [e.type for e in events]


def _search(query: str, call_id: str = "t1", **extra: Any) -> ToolUse:
    return ToolUse(id=call_id, name="search_documents", input={"query": query, **extra})


def test_agent_searches_then_streams_a_cited_answer(library: Library) -> None:
    model = ScriptedModel(
        [
            [TextDelta("Let me look."), _search("new bridge opened"), TurnEnd("tool_use", 10, 5)],
            [
                TextDelta("A new bridge opened in 2004 "),
                TextDelta("[1]."),
                TurnEnd("end_turn", 30, 8),
            ],
        ]
    )

    events = list(
        Agent(library, model, tuned_config()).run(
            [{"role": "user", "content": "When did it open?"}]
        )
    )

    assert _types(events) == [
        "status",
        "delta",
        "tool_call",
        "sources",
        "delta",
        "delta",
        "citations",
        "done",
    ]
    sources = event_data(events[3])["passages"]
    assert sources[0]["number"] == 1 and sources[0]["doc_id"] == "bridges"
    [citation] = event_data(events[6])["citations"]
    assert citation["page"] == 2  # the quoted sentence is on page 2 of the chunk
    assert (
        citation["quote"] == "A new bridge opened in 2004; it carries four lanes and a cycle path."
    )
    assert event_data(events[-1])["usage"] == {
        "input_tokens": 40,
        "output_tokens": 13,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "rerank_search_units": 0,
        "cost_usd": None,  # no list price names the scripted model
    }
    tool_result = model.calls[1]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and "[1] Bridges, pp. 1-2" in tool_result["content"]


def test_agent_drops_citations_to_passages_never_retrieved(library: Library) -> None:
    model = ScriptedModel(
        [
            [_search("ferry island"), TurnEnd("tool_use")],
            [TextDelta("The ferry leaves hourly [1], as the atlas says [7]."), TurnEnd("end_turn")],
        ]
    )

    events = list(
        Agent(library, model, tuned_config()).run([{"role": "user", "content": "How often?"}])
    )

    citations = event_data(next(e for e in events if e.type == "citations"))["citations"]
    assert [(c["number"], c["doc_id"]) for c in citations] == [(1, "ferries")]


def test_agent_refuses_a_repeated_identical_call(library: Library) -> None:
    model = ScriptedModel(
        [
            [_search("bridge", "a"), TurnEnd("tool_use")],
            [_search("bridge", "b"), TurnEnd("tool_use")],
            [TextDelta("Done [1]."), TurnEnd("end_turn")],
        ]
    )

    events = list(
        Agent(library, model, tuned_config()).run([{"role": "user", "content": "bridge?"}])
    )

    assert _types(events).count("sources") == 1
    repeated = model.calls[2]["messages"][-1]["content"][0]
    assert repeated["is_error"] and "already made this exact call" in repeated["content"]


def test_agent_stops_after_max_rounds_and_forces_an_answer(library: Library) -> None:
    looping = [[_search(f"query {n}", f"id{n}"), TurnEnd("tool_use")] for n in range(3)]
    model = ScriptedModel([*looping, [TextDelta("Best I can say [1]."), TurnEnd("end_turn")]])

    events = list(
        Agent(library, model, tuned_config(max_rounds=3)).run(
            [{"role": "user", "content": "bridge?"}]
        )
    )

    assert len(model.calls) == 3
    assert model.calls[-1]["tools"] == []  # the last round may only answer
    assert _types(events)[-2:] == ["citations", "done"]


def test_agent_model_error_mid_stream_ends_with_error_event(library: Library) -> None:
    model = ScriptedModel(
        [[TextDelta("Partial "), TextDelta("answer"), TurnEnd("end_turn")]], fail_after=1
    )

    events = list(
        Agent(library, model, tuned_config()).run([{"role": "user", "content": "bridge?"}])
    )

    assert _types(events) == ["status", "delta", "error"]
    assert event_data(events[-1]) == {
        "code": "model_unavailable",
        "message": "the model is overloaded: try again shortly",
    }


def test_agent_keeps_search_inside_the_chat_document_filter(library: Library) -> None:
    model = ScriptedModel(
        [
            [_search("bridge", doc_ids=["bridges"]), TurnEnd("tool_use")],
            [TextDelta("Nothing about bridges here."), TurnEnd("end_turn")],
        ]
    )

    events = list(
        Agent(library, model, tuned_config()).run(
            [{"role": "user", "content": "bridge?"}], doc_ids=["ferries"]
        )
    )

    docs = {p["doc_id"] for e in events if e.type == "sources" for p in event_data(e)["passages"]}
    assert docs == {"ferries"}


def test_agent_reads_pages_and_lists_documents(library: Library) -> None:
    model = ScriptedModel(
        [
            [
                ToolUse("l", "list_documents", {}),
                ToolUse("r", "read_pages", {"doc_id": "bridges", "first_page": 2, "last_page": 9}),
                TurnEnd("tool_use"),
            ],
            [TextDelta("It has four lanes [1]."), TurnEnd("end_turn")],
        ]
    )

    events = list(
        Agent(library, model, tuned_config()).run([{"role": "user", "content": "lanes?"}])
    )

    results = model.calls[1]["messages"][-1]["content"]
    assert (
        "- bridges: Bridges (file bridges.pdf, 2 pages, collections default)"
        in results[0]["content"]
    )
    assert "[1] Bridges, pp. 1-2" in results[1]["content"]
    assert event_data(next(e for e in events if e.type == "citations"))["citations"][0]["page"] == 2


def test_agent_without_model_answers_extractively_with_pages(library: Library) -> None:
    events = list(
        ExtractiveAnswerer(library, tuned_config()).run(
            [{"role": "user", "content": "When did the new bridge open?"}]
        )
    )

    assert _types(events)[:3] == ["status", "tool_call", "sources"]
    text = "".join(event_data(e)["text"] for e in events if e.type == "delta")
    assert text.startswith("No language model is configured")
    citations = event_data(next(e for e in events if e.type == "citations"))["citations"]
    assert citations[0]["page"] == 2 and "2004" in citations[0]["quote"]
    assert event_data(events[-1])["mode"] == "extractive"


def test_an_extractive_answer_whose_search_fails_ends_with_the_error(library: Library) -> None:
    # Before, the search ran as a model's tool call, whose failure became a result for a model:
    # the person read "The indexed documents do not contain a passage..." with the index down.
    class DownIndex(SlowIndex):
        def vector_search(self, query: Any, **options: Any) -> list[tuple[str, float]]:
            raise SearchIndexUnavailableError("OpenSearch is unavailable: retry later")

    library.index = DownIndex(library.index, delay_s=0)

    events = list(
        ExtractiveAnswerer(library, tuned_config()).run(
            [{"role": "user", "content": "When did the new bridge open?"}]
        )
    )

    assert _types(events)[-1] == "error"
    assert "OpenSearch is unavailable" in event_data(events[-1])["message"]
    assert not any(e.type == "delta" for e in events)


class FailingReranker:
    def rerank(self, query: str, passages: Sequence[Passage], *, top_n: int) -> list[Passage]:
        from docchat.errors import DocchatError

        raise DocchatError("rerank model unavailable in this region")

    def similarities(self, query: str, chunks: Sequence[Chunk]) -> dict[tuple[str, int], float]:
        return {}

    def search_units(self, passages: int) -> int:
        return 0


def test_library_falls_back_to_fused_order_when_rerank_fails(library: Library) -> None:
    library.reranker = FailingReranker()

    result = library.search("bridge", top_k=2)

    assert isinstance(result, SearchResult)
    assert not result.reranked
    assert result.rerank_note == "rerank model unavailable in this region"
    assert result.passages[0].chunk.doc_id == "bridges"


class SlowIndex:
    """An index whose first vector search is held `delay_s` (a collection waking from zero)."""

    def __init__(self, index: Any, delay_s: float) -> None:
        self.index = index
        self.delay_s = delay_s
        self.answered_at: float | None = None

    def vector_search(self, query: Any, **options: Any) -> list[tuple[str, float]]:
        if self.answered_at is None:
            time.sleep(self.delay_s)
        hits: list[tuple[str, float]] = self.index.vector_search(query, **options)
        self.answered_at = time.monotonic()
        return hits

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)


def _timed(events: Iterator[ChatEvent]) -> list[tuple[float, ChatEvent]]:
    return [(time.monotonic(), event) for event in events]


def _two_searches() -> ScriptedModel:
    return ScriptedModel(
        [
            [_search("bridge", "a"), TurnEnd("tool_use")],
            [_search("ferry", "b"), TurnEnd("tool_use")],
            [TextDelta("It opened in 2004 [1]."), TurnEnd("end_turn")],
        ]
    )


def test_agent_says_the_index_is_waking_while_the_first_search_waits(library: Library) -> None:
    # Given an index that holds its first search 0.5 s, and a notice after 0.05 s
    slow = SlowIndex(library.index, delay_s=0.5)
    library.index = slow
    agent = Agent(library, _two_searches(), tuned_config(wake_notice_s=0.05))

    # When the chat runs
    timed = _timed(agent.run([{"role": "user", "content": "When did it open?"}]))

    # Then a waking status arrives before the first sources, while the search still waits
    events = [event for _, event in timed]
    assert _types(events)[:4] == ["status", "tool_call", "status", "sources"]
    waking_at, waking = timed[2]
    assert event_data(waking) == {"stage": "waking_index", "message": WAKING}
    assert "waking the search index" in WAKING
    assert slow.answered_at is not None and waking_at < slow.answered_at
    assert _types(events).count("status") == 2  # the second search is not announced
    assert _types(events)[-2:] == ["citations", "done"]

    # And the next chat, with the index awake, announces nothing
    again = Agent(library, _two_searches(), tuned_config()).run(
        [{"role": "user", "content": "When?"}]
    )
    assert [event_data(e) for e in again if e.type == "status"] == [
        {"stage": "started", "mode": "model"}
    ]


def test_a_slow_local_search_is_not_announced_as_a_waking_index(library: Library) -> None:
    # `docchat serve` said "waking the search index: after a quiet spell its first answer takes
    # up to 30 seconds" whenever a question took 2 s (embedding its passages' sentences), though
    # the local index never sleeps.
    from docchat.wiring import agent_config
    from tests.chatkit import DEFAULTS

    library.index = SlowIndex(library.index, delay_s=0.3)
    config = agent_config(DEFAULTS, index_sleeps=False)

    events = list(Agent(library, _two_searches(), config).run([{"role": "user", "content": "?"}]))

    assert [e for e in events if e.type == "status" and event_data(e)["stage"] != "started"] == []
    assert _types(events)[-2:] == ["citations", "done"]


def test_agent_reports_a_failing_first_search_as_a_tool_error(library: Library) -> None:
    class DownIndex(SlowIndex):
        def vector_search(self, query: Any, **options: Any) -> list[tuple[str, float]]:
            time.sleep(self.delay_s)
            raise SearchIndexUnavailableError("OpenSearch is unavailable: retry later")

    library.index = DownIndex(library.index, delay_s=0.2)
    model = _two_searches()

    events = list(
        Agent(library, model, tuned_config(wake_notice_s=0.05)).run(
            [{"role": "user", "content": "When did it open?"}]
        )
    )

    assert _types(events)[:3] == ["status", "tool_call", "status"]
    result = model.calls[1]["messages"][-1]["content"][0]
    assert result["is_error"] and "OpenSearch is unavailable" in result["content"]
