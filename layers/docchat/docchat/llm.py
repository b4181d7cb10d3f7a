"""The chat-model contract the agent talks to: a streamed turn of text and tool calls.

Messages use the Anthropic Messages shape, which every adapter understands:
`{"role": "user" | "assistant", "content": str | [block, ...]}` with blocks
`{"type": "text", "text": ...}`, `{"type": "tool_use", "id", "name", "input"}` and
`{"type": "tool_result", "tool_use_id", "content": str, "is_error": bool}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer, streamed as the model writes it."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """The model asks for a tool; the turn ends after its tool calls."""

    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnEnd:
    stop_reason: str
    input_tokens: int = 0
    output_tokens: int = 0


ModelEvent = TextDelta | ToolUse | TurnEnd

