"""What the OpenAPI schema says beyond the models' own fields, so that a client (or a fuzzer
such as schemathesis) can tell a request the API takes from one it refuses, and read every
answer it can get: text that is not only white space, the events of a stream, and JSON error
bodies beside a stream's events.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, BeforeValidator

# Not only white space, as `str.strip()` sees it: the pattern of what the validators check,
# written with \u escapes, which JSON Schema's regular expressions and Python's read alike.
NOT_BLANK = "[^" + "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x3001)) if c.isspace()) + "]"


def _whole(value: object) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: Makes an integer field take an integer as JSON Schema has it: 3.0 is one, "3" and true are
#: not (in strict models, which refuse what the schema refuses). It goes after the field's
#: constraints: `Annotated[int, Field(ge=0), WHOLE]`, so that the schema shows them.
WHOLE = BeforeValidator(_whole)


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with its nested models written in place (no $refs), for a
    response whose content FastAPI would otherwise document as the route's own media type."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def resolved(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return resolved(definitions[ref.removeprefix("#/$defs/")])
            return {key: resolved(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolved(value) for value in node]
        return node

    result: dict[str, Any] = resolved(schema)
    return result


def event_stream(description: str, *, events: list[str] | None = None) -> dict[str, Any]:
    """A 200 response of Server-Sent Events: each event's fields (`event` one of `events`, its
    `data` JSON), and the stream read as a list of them (OpenAPI 3.2's `itemSchema`)."""
    item: dict[str, Any] = {"type": "object", "required": ["data"], "properties": {}}
    if events is not None:
        item["required"] = ["event", "data"]
        item["properties"]["event"] = {"enum": events}
    item["properties"]["data"] = {"type": "string"}
    return {
        "description": description,
        "content": {"text/event-stream": {"schema": {"type": "array"}, "itemSchema": item}},
    }
