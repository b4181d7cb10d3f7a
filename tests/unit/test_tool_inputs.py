"""Tool inputs: schemas generated from the input models, and an invalid call answered with a
tool error the model can correct, instead of ending the chat."""

from __future__ import annotations

from typing import Any

from docchat.answer.agent import Agent
from docchat.answer.tools import TOOLS
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.search.library import Library
from tests.chatkit import ScriptedModel, library, tuned_config

__all__ = ["library"]  # the fixture


def _read(call_id: str, **args: Any) -> ToolUse:
    return ToolUse(call_id, "read_pages", args)


def _answer_after(first: ToolUse) -> ScriptedModel:
    """A model that makes `first` call, then a correct read_pages call, then answers."""
    return ScriptedModel(
        [
            [first, TurnEnd("tool_use")],
            [_read("fixed", doc_id="bridges", first_page=2, last_page=2), TurnEnd("tool_use")],
            [TextDelta("It has four lanes [1]."), TurnEnd("end_turn")],
        ]
    )


def _tool_result(model: ScriptedModel, turn: int) -> dict[str, Any]:
    """The tool result the model was sent at the start of `turn` (0-based)."""
    result: dict[str, Any] = model.calls[turn]["messages"][-1]["content"][0]
    return result


def test_read_pages_without_doc_id_is_a_tool_error_the_model_corrects(library: Library) -> None:
    # Given a model whose first read_pages call forgets doc_id
    model = _answer_after(_read("bad", first_page=2, last_page=2))

    # When it answers a question
    events = list(
        Agent(library, model, tuned_config()).run([{"role": "user", "content": "lanes?"}])
    )

    # Then the model got an error result naming the missing field, and the chat ended well
    error = _tool_result(model, 1)
    assert error["tool_use_id"] == "bad" and error["is_error"] is True
    assert error["content"].startswith("Invalid input for read_pages: doc_id: Field required")
    retried = _tool_result(model, 2)
    assert retried["is_error"] is False and "[1] Bridges, pp. 1-2" in retried["content"]
    assert [e.type for e in events][-2:] == ["citations", "done"]
    assert "error" not in [e.type for e in events]


def test_read_pages_with_a_word_for_a_page_names_the_field_and_the_value(
    library: Library,
) -> None:
    model = _answer_after(_read("bad", doc_id="bridges", first_page="abc", last_page=2))

    events = list(
        Agent(library, model, tuned_config()).run([{"role": "user", "content": "lanes?"}])
    )

    error = _tool_result(model, 1)
    assert error["is_error"] is True
    assert "first_page: Input should be a valid integer" in error["content"]
    assert "(you gave 'abc')" in error["content"]
    assert [e.type for e in events][-1] == "done"


def test_read_pages_below_page_one_and_search_without_query_are_tool_errors(
    library: Library,
) -> None:
    model = _answer_after(_read("bad", doc_id="bridges", first_page=0, last_page=2))
    list(Agent(library, model, tuned_config()).run([{"role": "user", "content": "lanes?"}]))
    assert (
        "first_page: Input should be greater than or equal to 1"
        in (_tool_result(model, 1)["content"])
    )

    model = _answer_after(ToolUse("s", "search_documents", {"doc_ids": "bridges"}))
    events = list(
        Agent(library, model, tuned_config()).run([{"role": "user", "content": "lanes?"}])
    )
    content = _tool_result(model, 1)["content"]
    assert "query: Field required" in content and "doc_ids: Input should be a valid list" in content
    assert [e.type for e in events][-1] == "done"


def test_tool_schemas_are_generated_as_the_messages_api_takes_them() -> None:
    # https://docs.claude.com/en/docs/agents-and-tools/tool-use/implement-tool-use: each tool
    # has a name, a description and an input_schema, a JSON Schema of type object
    schemas = {name: t.spec.input_schema for name, t in TOOLS.items()}

    assert schemas == {
        "search_documents": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "doc_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "only search these documents (ids from list_documents)",
                },
                "company": {
                    "type": "string",
                    "maxLength": 200,
                    "description": "only documents about this company: its name, ticker or "
                    "initials",
                },
                "year": {
                    "type": "string",
                    "maxLength": 40,
                    "description": 'only documents about this (fiscal) year: "2022", "FY2022"',
                },
                "form": {
                    "type": "string",
                    "maxLength": 20,
                    "description": (
                        'only filings of this form: "10-K", "10-Q", "8-K", or "earnings release"'
                    ),
                },
                "quarter": {
                    "type": "string",
                    "maxLength": 60,
                    "description": (
                        'only quarterly reports and releases of this fiscal quarter: "Q2 '
                        'FY2024", "the second quarter of fiscal 2024" (in the company\'s own '
                        "fiscal calendar)"
                    ),
                },
                "collection": {
                    "type": "string",
                    "maxLength": 200,
                    "description": "only documents in this collection",
                },
            },
            "required": ["query"],
        },
        "read_pages": {
            "type": "object",
            "properties": {
                "doc_id": {"type": "string"},
                "first_page": {"type": "integer", "minimum": 1},
                "last_page": {"type": "integer", "minimum": 1},
            },
            "required": ["doc_id", "first_page", "last_page"],
        },
        "list_documents": {"type": "object", "properties": {}},
    }
