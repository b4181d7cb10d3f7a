"""The agent's tools: each input a pydantic model, its JSON schema generated from the model.

The model's input is validated with the same class; what fails goes back to the model as the
tool's error result, naming the field, so it can call again (`invalid_input_message`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from docchat.llm import ToolSpec

MAX_READ_PAGES = 5


class ToolInput(BaseModel):
    # A model that writes a number for a text field meant the text; extra keys are ignored.
    model_config = ConfigDict(frozen=True, coerce_numbers_to_str=True)


class SearchDocumentsInput(ToolInput):
    query: str = Field(description="what to look for")
    doc_ids: list[str] | None = Field(
        None, description="only search these documents (ids from list_documents)"
    )


class ReadPagesInput(ToolInput):
    doc_id: str
    first_page: int = Field(ge=1)
    last_page: int = Field(ge=1)


class ListDocumentsInput(ToolInput):
    pass


class _ToolSchema(GenerateJsonSchema):
    """JSON Schema as the Messages API takes a tool's `input_schema`: an object with
    `properties` and `required` (https://docs.claude.com/en/docs/agents-and-tools/tool-use/
    implement-tool-use). Titles add nothing for the model; an optional field is simply not
    required, rather than `anyOf` with null."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])


def input_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The tool's `input_schema`, generated from its input model."""
    schema = model.model_json_schema(schema_generator=_ToolSchema)
    schema.pop("title", None)
    return schema


INPUTS: dict[str, type[ToolInput]] = {
    "search_documents": SearchDocumentsInput,
    "read_pages": ReadPagesInput,
    "list_documents": ListDocumentsInput,
}
DESCRIPTIONS = {
    "search_documents": (
        "Hybrid keyword and semantic search over the indexed documents. Returns numbered "
        "passages with document title and pages; cite them by number."
    ),
    "read_pages": f"Read up to {MAX_READ_PAGES} consecutive pages of one document.",
    "list_documents": "List the indexed documents: id, title, pages.",
}
TOOLS = [
    ToolSpec(name=name, description=DESCRIPTIONS[name], input_schema=input_schema(model))
    for name, model in INPUTS.items()
]


def invalid_input_message(tool: str, error: ValidationError) -> str:
    """What the model is told when its input to `tool` does not validate: each wrong or
    missing field, with what it gave, and how to go on."""
    problems = []
    for item in error.errors(include_url=False):
        field = ".".join(str(p) for p in item["loc"]) or "input"
        given = "" if item["type"] == "missing" else f" (you gave {item['input']!r})"
        problems.append(f"{field}: {item['msg']}{given}")
    return (
        f"Invalid input for {tool}: {'; '.join(problems)}. Call {tool} again with input that "
        "matches its schema."
    )
