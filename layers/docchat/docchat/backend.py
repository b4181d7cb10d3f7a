"""What the chat API runs on: a library, an optional model, and the agent's settings."""

from __future__ import annotations

from dataclasses import dataclass

from docchat.agent import DEFAULT_SYSTEM_PROMPT, Agent, AgentConfig
from docchat.config import Settings
from docchat.library import Library
from docchat.llm import ChatModel


@dataclass
class ChatBackend:
    library: Library
    model: ChatModel | None
    config: AgentConfig

    @property
    def mode(self) -> str:
        return self.model.model_id if self.model else "extractive"

    def agent(self) -> Agent:
        return Agent(self.library, self.model, self.config)


def agent_config(settings: Settings) -> AgentConfig:
    return AgentConfig(
        system_prompt=settings.system_prompt or DEFAULT_SYSTEM_PROMPT,
        max_rounds=settings.max_rounds,
        top_k=settings.top_k,
        max_tokens=settings.max_tokens,
        answer_threshold=settings.answer_threshold,
    )


def chat_model(settings: Settings) -> ChatModel | None:
    """Claude on Bedrock or the Anthropic API when configured; None means extractive answers."""
    provider = settings.chat_provider
    if provider == "none":
        return None
    from docchat.adapters.anthropic_model import claude_model

    return claude_model(
        provider=provider,
        model_id=settings.model_id or None,
        region=settings.region or None,
        api_key=settings.anthropic_api_key or None,
    )


def local_library(settings: Settings) -> Library:
    """The embedded index and local embedder of `settings.data_dir`."""
    from docchat.local import local_embedder, open_index

    embedder = local_embedder(settings)
    index = open_index(settings, embedder)
    return Library(
        index=index,
        embedder=embedder,
        registry=index,
        candidates=settings.candidates,
        fusion=settings.fusion,
        vector_weight=settings.vector_weight,
    )


def local_backend(settings: Settings) -> ChatBackend:
    """The local library answered by the configured model (extractive when none is)."""
    return ChatBackend(
        library=local_library(settings), model=chat_model(settings), config=agent_config(settings)
    )
