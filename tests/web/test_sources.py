"""An answer's sources on the page: one chip per cited passage, with every quote taken from it.

An answer that quotes one passage four times showed four chips with the same title and page,
and its steps said "4 cited passages" (issue 44). The events are the server's own (the models
in docchat/answer/events.py, encoded by its `sse()`), handled by the page's own modules.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from typing import Any

import pytest

from docchat.answer import events as ev
from docchat.models import Citation
from tests.web.browser import expect, launched_chromium
from tests.web.serving import LocalServer

# Shows one answer made of the given [type, data] events, as the page's stream reader hands
# them over, in the page's transcript.
SHOW = """
async (events) => {
  const module = (name) => import(new URL(`static/${name}`, location.href).href);
  const { handleEvent } = await module("events.js");
  const { AnswerView } = await module("messages.js");
  document.getElementById("app").hidden = false;
  const view = new AnswerView();
  for (const [type, data] of events) handleEvent(view, { type, data });
}
"""

QUOTES = [  # (passage number, page, quote)
    (1, 3, "The ferry leaves the north pier at seven."),
    (1, 3, "The last ferry returns at nine."),
    (1, 4, "Fares are paid on board."),
    (2, 7, "The bridge opened in 2004."),
]


def _answer_events() -> list[list[Any]]:
    citations = [
        Citation(
            number=n, doc_id=f"doc{n}", title=f"Timetable {n}", source=f"t{n}.pdf", page=p, quote=q
        )
        for n, p, q in QUOTES
    ]
    events: list[ev.ChatEvent] = [
        ev.StatusEvent(stage="started", mode="extractive"),
        ev.ToolCallEvent(id="t0", name="search_documents", input={"query": "ferry"}),
        ev.DeltaEvent(text="It leaves at seven [1] and the bridge is from 2004 [2]."),
        ev.CitationsEvent(citations=citations),
        ev.DoneEvent(
            mode="extractive",
            usage=ev.Usage(input_tokens=0, output_tokens=0),
            timings=ev.Timings(total_ms=5.0, retrieval_ms=1.0, first_token_ms=2.0),
        ),
    ]
    wire = []
    for event in events:
        head, data = ev.sse(typing.cast(ev.ChatEvent, event)).rstrip("\n").split("\n")
        wire.append([head.removeprefix("event: "), json.loads(data.removeprefix("data: "))])
    return wire


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with LocalServer(tmp_path_factory.mktemp("sources-data")) as server:
        for browser in launched_chromium():
            context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
            opened = context.new_page()
            opened.goto(server.url)
            opened.evaluate(SHOW, _answer_events())
            yield opened
            context.close()


def test_one_chip_per_cited_passage(page: Any) -> None:
    answer = page.locator(".msg.assistant").last
    chips = answer.locator(".chip")
    expect(chips).to_have_count(2)
    expect(chips.nth(0)).to_contain_text("Timetable 1")
    expect(chips.nth(0).locator(".chip-page")).to_have_text("pp. 3, 4")
    expect(chips.nth(1).locator(".chip-page")).to_have_text("p. 7")
    expect(answer.locator(".steps summary")).to_have_text("1 search · 2 cited passages (4 quotes)")


def test_a_chip_shows_every_quote_of_its_passage(page: Any) -> None:
    answer = page.locator(".msg.assistant").last
    answer.locator(".chip").nth(0).click()
    page.keyboard.press("Escape")  # the chip opened the viewer too
    quote = answer.locator(".quote")
    expect(quote.locator("blockquote")).to_have_text([q for n, _p, q in QUOTES if n == 1])
    expect(quote.locator("figcaption")).to_contain_text("Timetable 1 · pages 3, 4")
    answer.locator(".chip").nth(1).click()
    page.keyboard.press("Escape")
    expect(quote.locator("blockquote")).to_have_text(["The bridge opened in 2004."])
    expect(quote.locator("figcaption")).to_contain_text("Timetable 2 · page 7")


def test_copy_lists_each_passage_once_with_its_quotes(page: Any) -> None:
    answer = page.locator(".msg.assistant").last
    answer.locator("[data-action=copy]").click()
    expect(answer.locator("[data-action=copy]")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    sources = copied.split("Sources:\n")[1].splitlines()
    assert sources == [
        "[1] Timetable 1, pages 3, 4: “The ferry leaves the north pier at seven.” … "
        "“The last ferry returns at nine.” … “Fares are paid on board.”",
        "[2] Timetable 2, page 7: “The bridge opened in 2004.”",
    ]
