"""A local docchat (no language model) served by a real uvicorn on 127.0.0.1, for the page."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.agent import Answerer, ExtractiveAnswerer
from docchat.answer.backend import ChatBackend
from docchat.answer.events import ChatEvent
from docchat.config import Settings
from docchat.ingest.shelf import Shelf
from docchat.ingest.uploads import LocalUploads
from docchat.llm import Message
from docchat.search.library import Library
from docchat.serve.access import AccessOf, local_admin
from docchat.serve.app import SignIn, create_app
from docchat.sources.store import sources_health
from tests.chatkit import SEARCH, ServedApp, tuned_config
from tests.conftest import WordEmbedder


class PacedAgent(ExtractiveAnswerer):
    """The extractive answer, with a pause before each piece of text so streaming is visible."""

    pause = 0.15

    def run(
        self, messages: Sequence[Message], *, doc_ids: Sequence[str] | None = None
    ) -> Iterator[ChatEvent]:
        for event in super().run(messages, doc_ids=doc_ids):
            if event.type == "delta":
                time.sleep(self.pause)
            yield event


@dataclass
class PacedBackend(ChatBackend):
    def agent(self) -> Answerer:
        return PacedAgent(self.library, self.config)


class LocalServer:
    """uvicorn in a thread over a fresh data directory, taking uploads directly and keeping
    conversations; `sign_in` and `gate` (an ASGI wrapper, such as API Gateway's stand-in) put it
    behind a sign-in, and `access_of` names the caller and says what they may read and write
    (a users file's, as `docchat serve --users`, or the claims', as the cloud wiring does)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        sign_in: Callable[[], SignIn] = SignIn,
        gate: Callable[[Any], Any] = lambda app: app,
        access_of: AccessOf = local_admin,
    ) -> None:
        settings = Settings(data_dir=data_dir)
        embedder = WordEmbedder()
        self.index = SqliteIndex(
            settings.index_path, embedding_model=embedder.model_id, dimension=embedder.dimension
        )
        library = Library(
            index=self.index,
            embedder=embedder,
            registry=self.index,
            page_store=self.index,
            **SEARCH,
        )
        self.backend = PacedBackend(library=library, model=None, config=tuned_config())
        self.uploads = LocalUploads(
            shelf=Shelf(self.index, self.index, self.index), embedder=embedder, settings=settings
        )
        self.conversations = SqliteConversations(settings.conversations_path)
        app = create_app(
            lambda: self.backend,
            uploads=lambda _: self.uploads,
            sign_in=sign_in,
            conversations=lambda: self.conversations,
            access_of=access_of,
            sources=lambda: sources_health(data_dir),  # as `docchat serve` says them
        )
        self.served = ServedApp(gate(app))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.served.port}/"

    def __enter__(self) -> LocalServer:
        self.served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.served.stop()
        self.uploads.close()
        self.conversations.close()
        self.index.close()
