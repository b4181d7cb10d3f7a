"""Every field the page reads from a chat event exists in what the server sends.

Each kind of event, built from the models in docchat/answer/events.py and encoded by the server's
own `sse()`, goes through the page's `handleEvent` (web/events.js, imported as the page imports
it) with its data behind a Proxy that notes each read of a field the data does not have (nested
ones included: passages, citations, tool inputs, and the citation fields web/messages.js reads
when a source is opened). A field renamed in a model, but not in the page, is such a read; so is
an event type the page has no handler for.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from docchat.answer import events as ev
from docchat.answer.tools import (
    TOOLS,
    ListDocumentsInput,
    ReadPagesInput,
    SearchDocumentsInput,
    ToolInput,
)
from docchat.models import Citation
from tests.chatkit import PASSAGE
from tests.web.browser import launched_chromium
from tests.web.serving import LocalServer

TOOL_INPUTS: dict[str, ToolInput] = {
    "search_documents": SearchDocumentsInput(query="new bridge", doc_ids=["bridges"]),
    "read_pages": ReadPagesInput(doc_id="bridges", first_page=1, last_page=2),
    "list_documents": ListDocumentsInput(),
}

# Runs each [type, data] through handleEvent on one AnswerView; answers the reads of fields
# the data does not have, and the types handleEvent has no handler for. At the end it opens
# the first citation, as a reader would, so that the quote's fields are read too. The modules
# are the page's own instances: an import of the same URL is the module the page loaded.
REPLAY = """
async (events) => {
  const module = (name) => import(new URL(`static/${name}`, location.href).href);
  const { EVENT_HANDLERS, handleEvent } = await module("events.js");
  const { AnswerView } = await module("messages.js");
  const missing = [];
  const watched = (value, path) => {
    if (value === null || typeof value !== "object") return value;
    return new Proxy(value, {
      get(target, key, receiver) {
        if (typeof key === "string" && !(key in target)) missing.push(`${path}.${key}`);
        const field = Reflect.get(target, key, receiver);
        return typeof key === "string" ? watched(field, `${path}.${key}`) : field;
      },
    });
  };
  const types = events.map(([type]) => type);
  const unhandled = types.filter((type) => !Object.hasOwn(EVENT_HANDLERS, type));
  const view = new AnswerView();
  for (const [type, data] of events) {
    try {
      handleEvent(view, { type, data: watched(data, type) });
    } catch (error) {
      if (type !== "error") throw error;
    }
  }
  view.root.querySelector(".chips button").click();
  const usage = view.root.querySelector(".step-list .usage");
  return { missing, unhandled, quote: view.quote.textContent, usage: usage && usage.textContent };
}
"""


def _samples() -> list[ev.ChatEvent]:
    """One event of each kind, every optional field filled, as the agent makes them."""
    citation = Citation(
        number=1,
        doc_id="bridges",
        title="Bridges",
        source="bridges.pptx",
        page=2,
        quote="| Opened | 2004 |",
        table_header=["| Bridge | Year |"],
        label="Slide 2: New bridges",
    )
    ranked = ev.RankedPassage(**PASSAGE.model_dump(), score=0.9, vector_rank=1, keyword_rank=2)
    return [
        ev.StatusEvent(stage="started", mode="extractive"),
        ev.StatusEvent(stage="waking_index", message="waking the search index"),
        *[
            ev.ToolCallEvent(id=f"t{n}", name=name, input=args.model_dump())
            for n, (name, args) in enumerate(TOOL_INPUTS.items())
        ],
        ev.SourcesEvent(query="new bridge", reranked=True, rerank_note="", passages=[ranked]),
        ev.SourcesEvent(
            query="bridges pages 1-2", reranked=False, rerank_note="", passages=[PASSAGE]
        ),
        ev.DeltaEvent(text="It opened in 2004 [1]."),
        ev.CitationsEvent(citations=[citation]),
        ev.DoneEvent(
            mode="extractive",
            usage=ev.Usage(
                input_tokens=1204,
                output_tokens=312,
                cache_read_tokens=800,
                rerank_search_units=2,
                cost_usd=0.0084,
            ),
            timings=ev.Timings(total_ms=5.0, retrieval_ms=1.0, first_token_ms=2.0),
        ),
        ev.ErrorEvent(code="internal", message="internal error"),
    ]


def _wire(event: BaseModel) -> list[Any]:
    """[type, data] as the page's SSE reader hands them to handleEvent."""
    head, data = ev.sse(typing.cast(ev.ChatEvent, event)).rstrip("\n").split("\n")
    return [head.removeprefix("event: "), json.loads(data.removeprefix("data: "))]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with LocalServer(tmp_path_factory.mktemp("events-data")) as server:
        for browser in launched_chromium():
            opened = browser.new_page()
            opened.goto(server.url)
            yield opened


def test_samples_cover_every_event_type_and_every_tool() -> None:
    union = typing.get_args(typing.get_args(ev.ChatEvent)[0])
    assert {type(e) for e in _samples()} == set(union)
    assert {name: type(args) for name, args in TOOL_INPUTS.items()} == {
        name: tool.input for name, tool in TOOLS.items()
    }


def test_page_reads_only_fields_the_events_have(page: Any) -> None:
    seen = page.evaluate(REPLAY, [_wire(e) for e in _samples()])

    assert seen["unhandled"] == []
    assert seen["missing"] == []
    assert "2004" in seen["quote"] and "bridges.pptx" in seen["quote"]
    assert "Slide 2: New bridges" in seen["quote"]  # the quote and its location were read
    # What the answer used and cost, among its steps (issue 46)
    assert seen["usage"] == (
        "1,204 tokens in (800 from cache), 312 out, 2 rerank queries · about $0.0084"
    )


def test_page_notices_a_field_it_reads_that_an_event_lacks(page: Any) -> None:
    # Given a citation whose `page` was renamed, as a model change would rename it
    [kind, data] = _wire(_samples()[-3])
    data["citations"][0]["page_number"] = data["citations"][0].pop("page")
    events = [_wire(ev.DeltaEvent(text="[1]")), [kind, data], _wire(_samples()[-2])]

    seen = page.evaluate(REPLAY, events)

    assert "citations.citations.0.page" in seen["missing"]


def test_page_reads_no_table_header_of_a_quoted_sentence(page: Any) -> None:
    # A sentence's citation leaves `table_header` out of its JSON; the page must not read it
    sentence = Citation(
        number=1, doc_id="bridges", title="Bridges", source="bridges.pdf", page=2, quote="2004"
    )
    events = [_wire(e) for e in _samples()]
    events[-3] = _wire(ev.CitationsEvent(citations=[sentence]))
    assert "table_header" not in events[-3][1]["citations"][0]

    seen = page.evaluate(REPLAY, events)

    assert seen["missing"] == []
    assert "2004" in seen["quote"]
