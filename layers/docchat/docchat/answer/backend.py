"""What the chat API runs on: a library, an optional model, and the agent's settings.
The wiring (docchat.wiring.local, docchat.wiring.cloud) builds one per mode."""

from __future__ import annotations

from dataclasses import dataclass, replace

from docchat.answer.agent import Agent, AgentConfig, Answerer, ExtractiveAnswerer
from docchat.ports import ChatModel
from docchat.search.library import Library, Visible


@dataclass
class ChatBackend:
    library: Library
    model: ChatModel | None
    config: AgentConfig

    @property
    def mode(self) -> str:
        return self.model.model_id if self.model else "extractive"

    def agent(self) -> Answerer:
        """The model's tool loop, or the extractive answer when no model is configured."""
        if self.model is None:
            return ExtractiveAnswerer(self.library, self.config)
        return Agent(self.library, self.model, self.config)

    def within(self, visible: Visible) -> ChatBackend:
        """The same backend over only the documents `visible` admits."""
        return replace(self, library=self.library.within(visible))
