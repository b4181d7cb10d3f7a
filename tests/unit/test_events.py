"""Chat events: their SSE encoding, the union's discriminator, the page's handler for each type,
and the OpenAI-compatible translation."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator

import pydantic
import pytest

from docchat.answer import events as ev
from docchat.errors import ModelError
from docchat.models import Citation
from docchat.serve.errors import status_of
from docchat.serve.openai_api import completion, completion_chunks
from tests.chatkit import PASSAGE
from tests.conftest import REPO

EVENTS_JS = REPO / "layers" / "docchat" / "docchat" / "web" / "events.js"
EVENTS = pydantic.TypeAdapter(ev.ChatEvent)
CITATION = Citation(number=1, doc_id="d", title="T", source="t.pdf", page=2, quote="“q”")
DONE = ev.DoneEvent(
    mode="model",
    usage=ev.Usage(input_tokens=3, output_tokens=4),
    timings=ev.Timings(total_ms=9.5, retrieval_ms=1.0, first_token_ms=None),
)


def _union_types() -> set[str]:
    union = typing.get_args(ev.ChatEvent)[0]
    return {member.model_fields["type"].default for member in typing.get_args(union)}


@pytest.mark.parametrize(
    ("event", "wire"),
    [
        (ev.StatusEvent(stage="started", mode="model"), '{"stage": "started", "mode": "model"}'),
        (
            ev.StatusEvent(stage="waking_index", message="waking"),
            '{"stage": "waking_index", "message": "waking"}',
        ),
        (
            ev.ToolCallEvent(id="t1", name="read_pages", input={"doc_id": "d"}),
            '{"id": "t1", "name": "read_pages", "input": {"doc_id": "d"}}',
        ),
        (ev.DeltaEvent(text="Grüße [1]"), '{"text": "Grüße [1]"}'),
        (
            ev.CitationsEvent(citations=[CITATION]),
            '{"citations": [{"number": 1, "doc_id": "d", "title": "T", "source": "t.pdf", '
            '"page": 2, "quote": "“q”"}]}',
        ),
        (
            DONE,
            '{"mode": "model", "usage": {"input_tokens": 3, "output_tokens": 4, '
            '"cache_read_tokens": 0, "cache_write_tokens": 0, "rerank_search_units": 0, '
            '"cost_usd": null}, '
            '"timings": {"total_ms": 9.5, "retrieval_ms": 1.0, "first_token_ms": null}}',
        ),
        (ev.ErrorEvent(code="internal", message="m"), '{"code": "internal", "message": "m"}'),
    ],
)
def test_event_is_sent_as_one_server_sent_event(event: ev.ChatEvent, wire: str) -> None:
    assert ev.sse(event) == f"event: {event.type}\ndata: {wire}\n\n"


def test_sources_keep_ranks_for_searches_and_leave_them_out_for_page_reads() -> None:
    ranked = ev.RankedPassage(**PASSAGE.model_dump(), score=0.5, vector_rank=None, keyword_rank=1)
    event = ev.SourcesEvent(query="q", reranked=False, rerank_note="", passages=[ranked, PASSAGE])

    data = json.loads(ev.sse(event).split("data: ", 1)[1])

    searched, read = data["passages"]
    assert (searched["score"], searched["vector_rank"], searched["keyword_rank"]) == (0.5, None, 1)
    assert set(searched) - set(read) == {"score", "vector_rank", "keyword_rank"}


def test_the_wire_data_validates_back_into_the_same_event() -> None:
    event = ev.CitationsEvent(citations=[CITATION])
    data = json.loads(ev.sse(event).split("data: ", 1)[1])

    assert EVENTS.validate_python({"type": "citations", **data}) == event


def test_events_are_frozen_and_refuse_unknown_fields() -> None:
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        ev.DeltaEvent(text="a").text = "b"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="Extra inputs"):
        EVENTS.validate_python({"type": "delta", "text": "a", "txt": "b"})
    with pytest.raises(pydantic.ValidationError, match="does not match any of the expected tags"):
        EVENTS.validate_python({"type": "deltas", "text": "a"})


def test_page_has_a_handler_for_every_event_type_and_no_other() -> None:
    # The page's handlers table: `export const EVENT_HANDLERS = { type(view, data) { ... }, ... };`
    script = EVENTS_JS.read_text(encoding="utf-8")
    table = re.search(r"^export const EVENT_HANDLERS = \{\n(.*?)^\};", script, re.M | re.S)
    assert table is not None, "events.js has no EVENT_HANDLERS table"
    handled = set(re.findall(r"^  (\w+)\(view\b", table.group(1), re.M))

    assert handled == _union_types()


def _answer() -> Iterator[ev.ChatEvent]:
    yield ev.StatusEvent(stage="started", mode="model")
    yield ev.DeltaEvent(text="It opened ")
    yield ev.DeltaEvent(text="in 2004 [1].")
    yield ev.CitationsEvent(citations=[CITATION])
    yield DONE


def test_openai_chunks_carry_the_text_then_stop_with_citations() -> None:
    lines = list(completion_chunks(_answer(), "docchat"))

    assert lines[-1] == "data: [DONE]\n\n"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert [c["choices"][0]["delta"] for c in chunks] == [
        {"role": "assistant", "content": ""},
        {"content": "It opened "},
        {"content": "in 2004 [1]."},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, None, None, "stop"]
    assert ["citations" in c for c in chunks] == [False, False, False, True]
    assert chunks[-1]["citations"] == [CITATION.model_dump()]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1


def test_openai_chunks_end_with_the_error_when_the_answer_fails() -> None:
    events = iter([ev.DeltaEvent(text="It "), ev.ErrorEvent(code="model_failed", message="boom")])

    lines = list(completion_chunks(events, "docchat"))

    assert lines[-1] == 'data: {"error": {"code": "model_failed", "message": "boom"}}\n\n'
    assert "[DONE]" not in "".join(lines)


def test_openai_completion_sums_text_usage_and_citations() -> None:
    whole = completion(_answer(), "docchat").model_dump(mode="json")

    assert whole["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "It opened in 2004 [1]."},
            "finish_reason": "stop",
        }
    ]
    assert whole["usage"] == {
        "prompt_tokens": 3,
        "completion_tokens": 4,
        "total_tokens": 7,
        "prompt_tokens_details": {"cached_tokens": 0},
        "cost_usd": None,
    }
    assert whole["citations"] == [CITATION.model_dump()]
    assert whole["object"] == "chat.completion" and whole["model"] == "docchat"


def test_openai_completion_of_a_failed_answer_is_a_bad_gateway() -> None:
    # The answer's error is raised again as the class its code names, whose status is the API's
    with pytest.raises(ModelError) as failed:
        completion(iter([ev.ErrorEvent(code="model_failed", message="boom")]), "docchat")

    assert str(failed.value) == "the answer failed: boom"
    assert status_of(type(failed.value)) == 502
