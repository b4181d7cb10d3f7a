"""Wiring: one module per mode builds the adapters behind docchat.ports.

`docchat.wiring.local` serves a data directory (the CLI, `docchat serve`); `docchat.wiring.cloud`
serves the Lambdas, and `docchat.wiring.lambda_handler` wraps each ingestion Lambda's step
(logs, traces, metrics, typed payloads). What both modes share (the agent's settings, the chat
model) is here; each takes the full `Settings` (local mode) or the cloud function's view of it
(docchat.processes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docchat.config import PREFIX, Settings
from docchat.errors import ConfigError
from docchat.processes import ChatSettings, ChunkSettings, ModelChoice

# The ingestion Lambdas import this package too: the chat side (the agent, the web app) is
# imported only where it is built.
if TYPE_CHECKING:
    from docchat.answer.agent import AgentConfig
    from docchat.ingest.notes import ChunkNotes, NoteCache
    from docchat.ports import ChatModel, ChunkStore, Embedder, Reranker


def agent_config(settings: Settings | ChatSettings, *, index_sleeps: bool) -> AgentConfig:
    """The agent's settings; `index_sleeps` when the search index scales to zero (OpenSearch
    Serverless), so that a slow first search is announced as the index waking."""
    from dataclasses import fields

    from docchat.answer.agent import DEFAULT_SYSTEM_PROMPT, AgentConfig
    from docchat.answer.extractive import QuoteWeights
    from docchat.answer.prices import load_prices

    return AgentConfig(
        prices=load_prices(settings.prices_file, region=settings.region),
        wake_notice_s=AgentConfig.wake_notice_s if index_sleeps else None,
        system_prompt=settings.system_prompt or DEFAULT_SYSTEM_PROMPT,
        max_rounds=settings.max_rounds,
        top_k=settings.top_k,
        max_tokens=settings.max_tokens,
        answer_threshold=settings.answer_threshold,
        # QuoteWeights.of takes the full Settings; the chat function's view holds its fields too.
        quote_weights=QuoteWeights(
            **{f.name: getattr(settings, f.name) for f in fields(QuoteWeights)}
        ),
    )


def rerank_off(settings: Settings | ChatSettings) -> str:
    """Why the reranker the settings ask for cannot run here ("" when it can): a Bedrock rerank
    model outside the Regions that offer it. Decided once, at start, not by a failing call per
    search."""
    if settings.reranker != "bedrock":
        return ""
    from docchat.adapters.bedrock_reranker import not_offered

    return not_offered(settings.rerank_model_id, settings.region)


def reranker(
    settings: Settings | ChatSettings, embedder: Embedder, *, store: ChunkStore | None = None
) -> Reranker | None:
    """What reorders the fused passages (DOCCHAT_RERANKER): the best sentence of each, with
    `embedder` (the default; its sentence vectors kept in `store` when given), a Bedrock
    rerank model, or nothing (also when `rerank_off`)."""
    if settings.reranker == "none" or rerank_off(settings):
        return None
    if settings.reranker == "bedrock":
        from docchat.adapters.bedrock_reranker import BedrockReranker

        return BedrockReranker(model_id=settings.rerank_model_id, region=settings.region or None)
    from docchat.search.rerank import SentenceReranker

    return SentenceReranker(
        embedder,
        sentence_weight=settings.sentence_weight,
        sentence_words=settings.sentence_words,
        store=store,
    )


def chat_model(settings: Settings | ModelChoice) -> ChatModel | None:
    """Claude on Bedrock or the Anthropic API, or a model behind an OpenAI-compatible server,
    when configured; None means extractive answers. Each adapter is imported only when chosen."""
    provider = settings.chat_provider
    if provider == "none":
        return None
    if provider == "openai":
        from docchat.adapters.openai_model import OpenAICompatibleModel

        return OpenAICompatibleModel(
            base_url=settings.openai_base_url,
            model_id=settings.model_id,
            api_key=settings.openai_api_key or None,
        )
    from docchat.adapters.anthropic_model import claude_model

    return claude_model(
        provider=provider,
        model_id=settings.model_id or None,
        region=settings.region or None,
        api_key=settings.anthropic_api_key or None,
    )


def notes_model(settings: Settings | ChunkSettings) -> ChatModel | None:
    """The model that writes each chunk's note at ingestion (DOCCHAT_CHUNK_CONTEXT=model);
    None when notes are off."""
    if settings.chunk_context != "model":
        return None
    model = chat_model(settings)
    if model is None:
        raise ConfigError(
            f"{PREFIX}CHUNK_CONTEXT=model needs a chat model to write the notes: set "
            f"{PREFIX}MODEL_PROVIDER (anthropic, bedrock or openai), or {PREFIX}CHUNK_CONTEXT=off"
        )
    return model


def chunk_notes(settings: Settings, cache: NoteCache) -> ChunkNotes | None:
    """Local ingestion's notes (see `notes_model`), kept in `cache`."""
    model = notes_model(settings)
    if model is None:
        return None
    from docchat.ingest.notes import ChunkNotes

    return ChunkNotes(model=model, cache=cache)
