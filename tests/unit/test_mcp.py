"""The MCP server through the official SDK's client, in process: tools, resources, errors, scope.

(tests/mcp_server drives the same server over stdio, as `docchat mcp`, and over streamable HTTP.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from docchat.answer.backend import ChatBackend
from docchat.answer.tools import (
    MAX_READ_PAGES,
    ListDocumentsInput,
    ReadPagesInput,
    SearchDocumentsInput,
    input_schema,
)
from docchat.config import Settings
from docchat.errors import ConfigError
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.serve.access import Access
from docchat.serve.mcp import mcp_server
from docchat.serve.mcp_tools import AskInput, page_link
from tests.chatkit import ScriptedModel
from tests.conftest import WordEmbedder
from tests.mcpkit import WEB_URL, backend_of, ingested

Session = Callable[[Client], Awaitable[Any]]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    data_dir = tmp_path_factory.mktemp("mcp") / "data"
    return data_dir, ingested(data_dir, WordEmbedder(), own_collections=True)


@pytest.fixture
def backend(data: tuple[Path, dict[str, str]]) -> Iterator[ChatBackend]:
    live = backend_of(data[0], WordEmbedder())
    yield live
    live.library.index.close()  # type: ignore[attr-defined]


@pytest.fixture
def ids(data: tuple[Path, dict[str, str]]) -> dict[str, str]:
    return data[1]


def _run(backend: ChatBackend, session: Session, *, caller: Access | None = None) -> Any:
    """`session` run with a client connected to the server over `backend`."""
    extra = {"default_access": caller} if caller else {}
    server = mcp_server(lambda: backend, web_url=WEB_URL, **extra)

    async def connected() -> Any:
        async with Client(server) as client:
            return await session(client)

    return anyio.run(connected)


def _call(backend: ChatBackend, tool: str, arguments: dict[str, Any], **kw: Any) -> Any:
    return _run(backend, lambda c: c.call_tool(tool, arguments), **kw)


def _refused(backend: ChatBackend, session: Session, **kw: Any) -> MCPError:
    """The protocol error `session` is answered with."""

    async def failing(client: Client) -> MCPError:
        try:
            await session(client)
        except MCPError as exc:
            return exc
        raise AssertionError("the server answered without an error")

    refusal: MCPError = _run(backend, failing, **kw)
    return refusal


def test_tools_are_the_agents_with_their_input_models_schemas(backend: ChatBackend) -> None:
    listed = _run(backend, lambda c: c.list_tools())

    schemas = {t.name: t.input_schema for t in listed.tools}
    assert schemas == {
        "search": input_schema(SearchDocumentsInput),
        "read_pages": input_schema(ReadPagesInput),
        "list_documents": input_schema(ListDocumentsInput),
        "ask": input_schema(AskInput),
    }
    assert all(t.annotations.read_only_hint for t in listed.tools)
    assert all(t.output_schema["type"] == "object" for t in listed.tools)


def test_search_returns_passages_with_their_pages_and_viewer_links(
    backend: ChatBackend, ids: dict[str, str]
) -> None:
    result = _call(backend, "search", {"query": "return ticket"})

    assert not result.is_error
    top = result.structured_content["passages"][0]
    ferries = ids["ferries"]
    assert {k: top[k] for k in ("doc_id", "title", "file_name", "page_start", "page_end")} == {
        "doc_id": ferries,
        "title": "Island ferries",
        "file_name": "ferries.pdf",
        "page_start": 2,
        "page_end": 2,
    }
    assert top["text"] == "A return ticket costs twelve euros."
    assert top["link"] == f"{WEB_URL}#doc={ferries}&page=2"
    # The same result as text, for clients that read no structured content
    assert json.loads(result.content[0].text) == result.structured_content


def test_search_within_named_documents(backend: ChatBackend, ids: dict[str, str]) -> None:
    result = _call(backend, "search", {"query": "river mile", "doc_ids": [ids["ferries"]]})

    assert {p["doc_id"] for p in result.structured_content["passages"]} == {ids["ferries"]}


def test_read_pages_returns_the_extracted_text_of_each_page(
    backend: ChatBackend, ids: dict[str, str]
) -> None:
    ferries = ids["ferries"]

    result = _call(backend, "read_pages", {"doc_id": ferries, "first_page": 1, "last_page": 2})

    assert result.structured_content == {
        "doc_id": ferries,
        "title": "Island ferries",
        "file_name": "ferries.pdf",
        "page_count": 2,
        "pages": [
            {
                "number": 1,
                "text": "# Ferries\n\nThe ferry to the island leaves every hour.",
                "ocr": False,
                "link": f"{WEB_URL}#doc={ferries}&page=1",
            },
            {
                "number": 2,
                "text": "## Fares\n\nA return ticket costs twelve euros.",
                "ocr": False,
                "link": f"{WEB_URL}#doc={ferries}&page=2",
            },
        ],
        "note": "",
    }


def test_read_pages_returns_at_most_five_pages_and_says_where_to_go_on(
    backend: ChatBackend, ids: dict[str, str]
) -> None:
    result = _call(
        backend, "read_pages", {"doc_id": ids["bridges"], "first_page": 2, "last_page": 9}
    )

    pages = result.structured_content["pages"]
    assert [p["number"] for p in pages] == [2, 3, 4, 5, 6]
    assert len(pages) == MAX_READ_PAGES
    assert result.structured_content["note"] == (
        "pages 2-6 of the 2-9 asked for: read_pages returns up to 5 pages a call; call again "
        "from page 7"
    )


@pytest.mark.parametrize(
    ("first", "last", "read", "note"),
    [
        (3, 7, [3, 4, 5, 6, 7], ""),
        (4, 9, [4, 5, 6, 7], "pages 4-7 of the 4-9 asked for: the document has 7 pages"),
        (3, 12, [3, 4, 5, 6, 7], "pages 3-7 of the 3-12 asked for: the document has 7 pages"),
        (6, 2, [6], ""),
    ],
)
def test_read_pages_near_the_end_says_the_document_ends(
    backend: ChatBackend, ids: dict[str, str], first: int, last: int, read: list[int], note: str
) -> None:
    arguments = {"doc_id": ids["bridges"], "first_page": first, "last_page": last}

    result = _call(backend, "read_pages", arguments)

    assert [p["number"] for p in result.structured_content["pages"]] == read
    assert result.structured_content["note"] == note


def test_read_pages_past_the_end_says_how_many_pages_there_are(
    backend: ChatBackend, ids: dict[str, str]
) -> None:
    result = _call(
        backend, "read_pages", {"doc_id": ids["ferries"], "first_page": 3, "last_page": 4}
    )

    assert result.is_error
    assert result.content[0].text == (
        f"{ids['ferries']} has 2 pages: page 3 is out of range, ask for 1-2"
    )


def test_list_documents(backend: ChatBackend, ids: dict[str, str]) -> None:
    result = _call(backend, "list_documents", {})

    listed = sorted(result.structured_content["documents"], key=lambda d: d["file_name"])
    assert listed == [
        {
            "doc_id": ids["bridges"],
            "title": "City bridges",
            "file_name": "bridges.pdf",
            "pages": 7,
            "link": f"{WEB_URL}#doc={ids['bridges']}&page=1",
            "company": "",
            "years": [],
            "form": "",
            "date": "",
            "quarter": "",
            "collections": ["bridges"],
        },
        {
            "doc_id": ids["ferries"],
            "title": "Island ferries",
            "file_name": "ferries.pdf",
            "pages": 2,
            "link": f"{WEB_URL}#doc={ids['ferries']}&page=1",
            "company": "",
            "years": [],
            "form": "",
            "date": "",
            "quarter": "",
            "collections": ["ferries"],
        },
    ]


def test_ask_without_a_model_answers_extractively_with_verified_quotes(
    backend: ChatBackend, ids: dict[str, str]
) -> None:
    result = _call(backend, "ask", {"question": "How much does a return ticket cost?"})

    answer = result.structured_content
    assert answer["mode"] == "extractive"
    assert answer["answer"].startswith("No language model is configured")
    assert "“A return ticket costs twelve euros.” [1]" in answer["answer"]
    first = answer["citations"][0]
    assert {k: first[k] for k in ("number", "doc_id", "page", "quote", "file_name")} == {
        "number": 1,
        "doc_id": ids["ferries"],
        "page": 2,
        "quote": "A return ticket costs twelve euros.",
        "file_name": "ferries.pdf",
    }
    assert first["link"] == page_link(WEB_URL, ids["ferries"], 2, quote_text=first["quote"])


def test_ask_with_a_model_collects_its_answer_and_citations(
    data: tuple[Path, dict[str, str]], ids: dict[str, str]
) -> None:
    model = ScriptedModel(
        [
            [ToolUse("t1", "search_documents", {"query": "return ticket"}), TurnEnd("tool_use")],
            [TextDelta("A return costs twelve euros "), TextDelta("[1]."), TurnEnd("end_turn")],
        ]
    )
    backend = backend_of(data[0], WordEmbedder(), model)

    result = _call(backend, "ask", {"question": "What does a return cost?"})

    assert result.structured_content["mode"] == "model"
    assert result.structured_content["answer"] == "A return costs twelve euros [1]."
    cited = [(c["doc_id"], c["page"], c["quote"]) for c in result.structured_content["citations"]]
    assert cited == [(ids["ferries"], 2, "A return ticket costs twelve euros.")]
    assert model.calls[0]["messages"] == [{"role": "user", "content": "What does a return cost?"}]


def test_ask_when_the_model_fails_is_a_tool_error_with_its_message(
    data: tuple[Path, dict[str, str]],
) -> None:
    model = ScriptedModel([[TextDelta("A")]], fail_after=0)
    backend = backend_of(data[0], WordEmbedder(), model)

    result = _call(backend, "ask", {"question": "What does a return cost?"})

    assert result.is_error
    assert result.content[0].text == "the model is overloaded: try again shortly"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_cancelled_ask_stops_the_model(data: tuple[Path, dict[str, str]], mode: str) -> None:
    # Given a model that writes slowly (40 deltas, 50 ms apart)
    words = [TextDelta("word ") for _ in range(40)]
    model = ScriptedModel(
        [
            [ToolUse("t1", "search_documents", {"query": "ferry"}), TurnEnd("tool_use")],
            [*words, TextDelta("[1]."), TurnEnd("end_turn")],
        ],
        pause=0.05,
    )
    backend = backend_of(data[0], WordEmbedder(), model)
    server = mcp_server(lambda: backend, web_url=WEB_URL)

    # When the client gives up on its ask after half a second
    async def session() -> None:
        async with Client(server, mode=mode) as client:
            with anyio.move_on_after(0.5):
                await client.call_tool("ask", {"question": "When does the ferry leave?"})
            # Until the model's stream is closed, for at most longer than the model would take
            # to finish (2 s): a model that is not stopped ends its turn meanwhile.
            with anyio.move_on_after(2.5):
                while not model.closed:
                    await anyio.sleep(0.02)

    started = time.monotonic()
    anyio.run(session)

    # Then the model's second turn was closed before its end (only the first turn finished)
    assert len(model.calls) == 2
    assert model.closed == [2]
    assert model.finished_at is not None
    assert model.finished_at - started < 0.5


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "read_pages",
            {"doc_id": "x", "first_page": 0, "last_page": 1},
            "Invalid input for read_pages: first_page: Input should be greater than or equal "
            "to 1 (you gave 0). Call read_pages again with input that matches its schema.",
        ),
        (
            "search",
            {"doc_ids": ["x"]},
            "Invalid input for search: query: Field required. Call search again with input "
            "that matches its schema.",
        ),
        (
            "ask",
            {"question": "   "},
            "Invalid input for ask: question: Value error, the question is only white space: "
            "write something (you gave '   '). Call ask again with input that matches its "
            "schema.",
        ),
    ],
)
def test_bad_arguments_are_tool_errors_naming_the_field(
    backend: ChatBackend, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    result = _call(backend, tool, arguments)

    assert result.is_error
    assert result.content[0].text == expected


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "read_pages",
            {"doc_id": "no-such-doc", "first_page": 1, "last_page": 1},
            "no document with id 'no-such-doc': list_documents lists the documents you can read",
        ),
        (
            "search",
            {"query": "ferry", "doc_ids": ["no-such-doc"]},
            "unknown document ids: no-such-doc; list_documents lists the documents you can read",
        ),
        (
            "ask",
            {"question": "ferry?", "doc_ids": ["no-such-doc"]},
            "unknown document ids: no-such-doc; list_documents lists the documents you can read",
        ),
    ],
)
def test_a_document_that_does_not_exist_is_a_clear_tool_error(
    backend: ChatBackend, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    result = _call(backend, tool, arguments)

    assert result.is_error
    assert result.content[0].text == expected


def test_an_unknown_tool_is_a_protocol_error(backend: ChatBackend) -> None:
    refusal = _refused(backend, lambda c: c.call_tool("delete", {}))

    assert refusal.error.message == "there is no tool named 'delete': tools/list lists them"


def test_resources_list_the_documents_and_a_page_template(backend: ChatBackend) -> None:
    async def session(client: Client) -> tuple[Any, Any]:
        return await client.list_resources(), await client.list_resource_templates()

    resources, templates = _run(backend, session)

    assert [r.uri for r in resources.resources] == ["docchat://documents"]
    assert [t.uri_template for t in templates.resource_templates] == [
        "docchat://documents/{doc_id}/pages/{number}"
    ]


def test_page_resource_is_the_pages_text(backend: ChatBackend, ids: dict[str, str]) -> None:
    uri = f"docchat://documents/{ids['ferries']}/pages/2"

    read = _run(backend, lambda c: c.read_resource(uri))

    [content] = read.contents
    assert (content.uri, content.mime_type) == (uri, "text/markdown")
    assert content.text == "## Fares\n\nA return ticket costs twelve euros."


def test_documents_resource_names_each_documents_pages(
    backend: ChatBackend, ids: dict[str, str]
) -> None:
    read = _run(backend, lambda c: c.read_resource("docchat://documents"))

    listed = {d["doc_id"]: d for d in json.loads(read.contents[0].text)["documents"]}
    assert listed[ids["bridges"]]["page_uri"] == (
        f"docchat://documents/{ids['bridges']}/pages/{{number}}"
    )
    assert listed[ids["bridges"]]["pages"] == 7


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        (
            "docchat://documents/no-such-doc/pages/1",
            "no document with id 'no-such-doc': list_documents lists the documents you can read",
        ),
        ("docchat://documents/{ferries}/pages/9", "has 2 pages: page 9 is out of range"),
        ("docchat://elsewhere", "no resource 'docchat://elsewhere': read docchat://documents or"),
    ],
)
def test_a_resource_that_cannot_be_read_is_an_error_saying_why(
    backend: ChatBackend, ids: dict[str, str], uri: str, message: str
) -> None:
    refusal = _refused(backend, lambda c: c.read_resource(uri.format(ferries=ids["ferries"])))

    assert message in refusal.error.message
    assert refusal.error.code == -32602  # invalid params


def test_a_caller_sees_only_the_documents_they_may_read(
    backend: ChatBackend, ids: dict[str, str]
) -> None:
    ana = Access(user="ana", read=frozenset({"ferries"}))
    bridges = ids["bridges"]

    async def session(client: Client) -> dict[str, Any]:
        return {
            "list": await client.call_tool("list_documents", {}),
            "search": await client.call_tool("search", {"query": "swing bridge tall ships"}),
            "ask": await client.call_tool(
                "ask", {"question": "When does the swing bridge open, and the ferry leave?"}
            ),
            "read": await client.call_tool(
                "read_pages", {"doc_id": bridges, "first_page": 1, "last_page": 1}
            ),
            "named": await client.call_tool("search", {"query": "x", "doc_ids": [bridges]}),
        }

    seen = _run(backend, session, caller=ana)

    assert [d["doc_id"] for d in seen["list"].structured_content["documents"]] == [ids["ferries"]]
    assert {p["doc_id"] for p in seen["search"].structured_content["passages"]} == {ids["ferries"]}
    assert {c["doc_id"] for c in seen["ask"].structured_content["citations"]} == {ids["ferries"]}
    assert seen["read"].content[0].text == (
        f"no document with id {bridges!r}: list_documents lists the documents you can read"
    )
    assert seen["named"].content[0].text.startswith(f"unknown document ids: {bridges};")
    page = f"docchat://documents/{bridges}/pages/1"
    refusal = _refused(backend, lambda c: c.read_resource(page), caller=ana)
    assert refusal.error.message.startswith(f"no document with id {bridges!r}")


def test_a_caller_who_may_read_nothing_is_told_so(backend: ChatBackend) -> None:
    nobody = Access(user="eve")

    result = _call(backend, "search", {"query": "ferry"}, caller=nobody)

    assert result.is_error
    assert result.content[0].text == (
        "there are no documents you may read: list_documents lists the documents you can read"
    )


def test_page_link_opens_the_page_in_the_viewer_with_the_quote() -> None:
    link = page_link("https://chat.example/Prod/", "q3-report-1a2b", 4, quote_text="5% & more")

    assert link == "https://chat.example/Prod/#doc=q3-report-1a2b&page=4&quote=5%25%20%26%20more"


@pytest.mark.parametrize("url", ["localhost:8000", "ftp://chat.example/", ""])
def test_web_url_must_be_the_http_address_of_the_chat_page(url: str) -> None:
    with pytest.raises(ConfigError, match="DOCCHAT_WEB_URL: Value error, must be an http"):
        Settings.from_env({"DOCCHAT_WEB_URL": url})
