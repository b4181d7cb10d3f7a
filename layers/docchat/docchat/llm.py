"""The chat-model contract the agent talks to: a streamed turn of text and tool calls.

Messages use the Anthropic Messages shape, which every adapter understands:
`{"role": "user" | "assistant", "content": str | [block, ...]}` with blocks
`{"type": "text", "text": ...}`, `{"type": "tool_use", "id", "name", "input"}` and
`{"type": "tool_result", "tool_use_id", "content": str, "is_error": bool}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypedDict

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
    is_error: bool


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
    stop_reason: str
    input_tokens: int = 0
    output_tokens: int = 0


ModelEvent = TextDelta | ToolUse | TurnEnd
