"""Collections on the page, in headless Chromium: the picker lists them with counts and shows the
chosen one's documents, an upload goes into the chosen collection, and the scope selector beside
the question decides which documents answer (sent as `scope`, shown on the question, kept with the
saved conversation).

A real uvicorn serves a local docchat (the local user, an admin) whose ferries.pdf is in the
collection `ferries` and bridges.pdf in `bridges`; the question's best passages are in bridges.pdf.
The collection screenshot of docs/collections.md comes from here:
`DOCCHAT_SCREENSHOTS=docs/screenshots make test`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docchat.config import Settings
from docchat.ingest.local import ingest_file
from docchat.ingest.shelf import Shelf
from docchat.serve.access import UsersFile, token_sha256
from tests.api.collectionkit import OTHER_TEXT
from tests.conftest import REPO, WordEmbedder
from tests.mcpkit import write_pdfs
from tests.pdfgen import make_pdf
from tests.web.browser import expect
from tests.web.serving import LocalServer

DESKTOP = {"width": 1280, "height": 800}
INDEXING_TIMEOUT_MS = 40_000
ANSWER_TIMEOUT_MS = 20_000
# Its best passage is the stone bridge page (bridges.pdf); ferries.pdf answers half of it.
QUESTION = "Who built the stone bridge, and when does the ferry to the island leave?"


# Reads both collections, writes `ferries` only (as `docchat serve --users` serves her).
ANA = UsersFile.model_validate(
    {
        "users": [
            {
                "name": "ana",
                "token_sha256": token_sha256("ana-token"),
                "read": ["bridges"],
                "write": ["ferries"],
            }
        ]
    }
)


def _in_collections(running: LocalServer, data_dir: Path) -> None:
    """ferries.pdf into `ferries`, bridges.pdf into `bridges`."""
    for path in write_pdfs(data_dir.parent / f"{data_dir.name}-pdfs"):
        result = ingest_file(
            path,
            shelf=Shelf(running.index, running.index, running.index),
            embedder=WordEmbedder(),
            settings=Settings(data_dir=data_dir),
            collections=[path.stem],
        )
        assert result.outcome == "indexed", result.record.error


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    data_dir = tmp_path_factory.mktemp("web-collections")
    with LocalServer(data_dir) as running:
        _in_collections(running, data_dir)
        yield running


@pytest.fixture
def page(browser: Any, server: LocalServer) -> Iterator[Any]:
    context = browser.new_context(viewport=DESKTOP)
    opened = context.new_page()
    failed: list[str] = []
    opened.on("requestfailed", lambda request: failed.append(f"{request.url} {request.failure}"))
    opened.goto(server.url)
    yield opened
    # Shown with a failing test's output (a page that never started: which request broke, how)
    print("failed requests:", *failed, sep="\n  ")
    context.close()


def _chat_bodies(page: Any) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: bodies.append(json.loads(r.post_data or "{}")) if r.url.endswith("/chat") else 0,
    )
    return bodies


def _ask(page: Any, question: str) -> tuple[Any, str]:
    """The answer on the page, and the whole event stream /chat sent for it."""
    page.locator("#question").fill(question)
    with page.expect_response("**/chat") as sent:
        page.locator("#question").press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    return answer, sent.value.text()


def _cited_titles(answer: Any) -> set[str]:
    return set(answer.locator(".chip .chip-title").all_inner_texts())


def _titles(server: LocalServer) -> dict[str, str]:
    """Each document's title as a chip shows it, by its file's stem."""
    return {Path(d.source).stem: d.title or Path(d.source).name for d in server.index.documents()}


def test_picker_lists_collections_and_shows_the_chosen_ones_documents(page: Any) -> None:
    picker = page.locator("#collection")
    expect(picker).to_be_visible()
    options = picker.locator("option")
    expect(options).to_have_text(["bridges (1)", "default (0)", "ferries (1)"])

    picker.select_option("ferries")
    expect(page.locator("#doc-list li.doc")).to_have_count(1)
    expect(page.locator("#doc-list li.doc")).to_contain_text("ferries.pdf")
    picker.select_option("bridges")
    expect(page.locator("#doc-list li.doc")).to_contain_text("bridges.pdf")
    expect(page.locator("#doc-list li.doc", has_text="ferries.pdf")).to_have_count(0)
    # The scope selector names the collection shown
    expect(page.locator("#scope option[value=collection]")).to_have_text("This collection: bridges")

    # The choice is kept in this browser
    page.reload()
    expect(page.locator("#collection")).to_have_value("bridges")
    expect(page.locator("#doc-list li.doc")).to_contain_text("bridges.pdf")


def test_an_upload_goes_into_the_chosen_collection(
    page: Any, server: LocalServer, tmp_path: Path
) -> None:
    page.locator("#collection").select_option("ferries")
    expect(page.locator("#doc-list li.doc")).to_have_count(1)
    pdf = tmp_path / "ferry-fares.pdf"
    pdf.write_bytes(make_pdf([[("h1", "Ferry fares"), ("body", "A ferry ticket costs 4 euros.")]]))

    page.set_input_files("#file", str(pdf))

    row = page.locator("#doc-list li.doc", has_text="ferry-fares.pdf")
    expect(row).to_have_attribute("data-status", "INDEXED", timeout=INDEXING_TIMEOUT_MS)
    [record] = [d for d in server.index.documents() if d.source.endswith("ferry-fares.pdf")]
    assert record.collections == ["ferries"]
    expect(page.locator("#collection option[value=ferries]")).to_have_text("ferries (2)")
    # Not in the other collections' lists
    page.locator("#collection").select_option("bridges")
    expect(page.locator("#doc-list li.doc", has_text="bridges.pdf")).to_have_count(1)
    expect(page.locator("#doc-list li.doc", has_text="ferry-fares.pdf")).to_have_count(0)


def test_a_question_in_one_collection_cites_only_that_collection(
    page: Any, server: LocalServer, tmp_path: Path
) -> None:
    titles = _titles(server)
    bodies = _chat_bodies(page)
    page.locator("#collection").select_option("ferries")
    expect(page.locator("#scope")).to_have_value("collection")

    # Asked in `ferries`, the bridge question's best passages (in bridges.pdf) are never cited
    answer, stream = _ask(page, QUESTION)
    assert bodies[-1]["scope"] == {"collections": ["ferries"]}
    for words in OTHER_TEXT:
        assert words not in stream, words
    cited = _cited_titles(answer)
    assert cited and cited <= {titles["ferries"], titles.get("ferry-fares")}, cited
    question = page.locator(".msg.user").last
    expect(question.locator(".msg-scope")).to_have_text("Asked in ferries")

    screenshots = REPO / os.environ.get("DOCCHAT_SCREENSHOTS", tmp_path)
    screenshots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshots / "collections-desktop.png"))

    # Asked in every collection, the same question cites bridges.pdf, and sends no scope
    page.locator("#scope").select_option("all")
    answer, stream = _ask(page, QUESTION)
    assert "Monks built" in stream
    assert "scope" not in bodies[-1]
    assert titles["bridges"] in _cited_titles(answer)
    expect(page.locator(".msg.user").last.locator(".msg-scope")).to_have_count(0)

    # The saved conversation shows each question's scope again, and reopens in the last one's
    page.reload()
    expect(page.locator(".msg.user")).to_have_count(2)
    expect(page.locator(".msg.user").first.locator(".msg-scope")).to_have_text("Asked in ferries")
    expect(page.locator("#scope")).to_have_value("all")


def test_a_question_about_selected_documents(page: Any, server: LocalServer) -> None:
    titles = _titles(server)
    bodies = _chat_bodies(page)
    selected = page.locator("#scope option[value=selected]")
    expect(selected).to_be_disabled()
    page.locator("#collection").select_option("ferries")
    row = page.locator("#doc-list li.doc", has_text="ferries.pdf")
    [ferries] = [d.doc_id for d in server.index.documents() if d.source.endswith("/ferries.pdf")]

    row.get_by_role("checkbox").check()
    expect(selected).to_have_text("The selected documents (1)")
    page.locator("#scope").select_option("selected")
    # A selection outlives another collection shown
    page.locator("#collection").select_option("bridges")
    expect(page.locator("#scope")).to_have_value("selected")

    answer, stream = _ask(page, QUESTION)
    assert bodies[-1]["scope"] == {"doc_ids": [ferries]}
    assert "Monks built" not in stream
    assert _cited_titles(answer) == {titles["ferries"]}
    expect(page.locator(".msg.user").last.locator(".msg-scope")).to_have_text(
        "Asked about 1 selected document"
    )


def test_a_user_uploads_and_deletes_only_where_they_may_write(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Given Ana of a users file, who reads `bridges` and writes `ferries` (and no more)
    data_dir = tmp_path_factory.mktemp("web-collections-users")
    with LocalServer(data_dir, access_of=ANA.access_of) as running:
        _in_collections(running, data_dir)
        context = browser.new_context(viewport=DESKTOP)
        context.add_init_script("localStorage.setItem('docchat-api-token', 'ana-token')")
        page = context.new_page()
        page.goto(running.url)

        # Then the picker lists her two collections (not `default`), and in `bridges` she may
        # neither upload nor delete
        expect(page.locator("#collection option")).to_have_text(["bridges (1)", "ferries (1)"])
        expect(page.locator("#collection")).to_have_value("bridges")
        expect(page.locator("#doc-list li.doc")).to_contain_text("bridges.pdf")
        expect(page.locator("#upload")).to_be_hidden()
        expect(page.locator("#doc-list .delete")).to_have_count(0)
        # In `ferries` she may
        page.locator("#collection").select_option("ferries")
        expect(page.locator("#upload")).to_be_visible()
        expect(
            page.locator("#doc-list li.doc", has_text="ferries.pdf").locator(".delete")
        ).to_have_count(1)
        context.close()
