"""The chat-model contract the agent talks to: a streamed turn of text and tool calls.

Messages use the Anthropic Messages shape, which every adapter understands:
`{"role": "user" | "assistant", "content": str | [block, ...]}` with blocks
`{"type": "text", "text": ...}`, `{"type": "tool_use", "id", "name", "input"}` and
`{"type": "tool_result", "tool_use_id", "content": str, "is_error": bool}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict

from pydantic import JsonValue

#: A JSON object: a tool's input, a tool's input schema.
JsonObject = dict[str, JsonValue]


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ToolUseBlock(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: JsonObject


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str
    is_error: NotRequired[bool]  # optional in the Messages API: absent means false


Block = TextBlock | ToolUseBlock | ToolResultBlock


class Message(TypedDict):
    role: Literal["user", "assistant"]
    content: str | list[Block]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: JsonObject


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer, streamed as the model writes it."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """The model asks for a tool; the turn ends after its tool calls."""

    id: str
    name: str
    input: JsonObject = field(default_factory=dict)


@dataclass(frozen=True)
class TurnEnd:
    """A turn's end, with the tokens it used: `input_tokens` counts every input token, the
    `cache_read_tokens` read from and `cache_write_tokens` written to a prompt cache too."""

    stop_reason: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


ModelEvent = TextDelta | ToolUse | TurnEnd


#: The geographies of Bedrock's cross-Region inference profiles (FACTS.md; template.yaml's
#: ChatModelId pattern).
PROFILE_GEOGRAPHIES = frozenset({"global", "us", "eu", "jp", "apac", "au", "ca", "us-gov"})


def foundation_model_id(model_id: str) -> str:
    """The foundation model an inference profile id routes to
    ('global.anthropic.claude-sonnet-4-6' -> 'anthropic.claude-sonnet-4-6'); any other id as
    it is."""
    geography, dot, rest = model_id.partition(".")
    return rest if dot and geography in PROFILE_GEOGRAPHIES and "." in rest else model_id
