"""The app tests/api/test_crash.py runs in a uvicorn of its own, to kill it mid-answer: a
library of one document and a model that writes its answer slowly, one word at a time, with
conversations saved where CRASH_STORE says (`sqlite:<file>` or `dynamodb:<table>`, the latter
at AWS_ENDPOINT_URL), and the index at CRASH_INDEX."""

from __future__ import annotations

import os
from pathlib import Path

import boto3
from fastapi import FastAPI

from docchat.adapters.dynamodb_conversations import DynamoConversations
from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.answer.agent import Agent
from docchat.answer.backend import ChatBackend
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.ports import ConversationStore
from docchat.serve.app import create_app
from tests.chatkit import ScriptedModel, library_of, tuned_config

PAGES = {"bridges": ["A new bridge opened in 2004; it carries four lanes and a cycle path."]}
WORDS = [f"word{n} " for n in range(200)]  # 200 words at PAUSE_S each: a minute of answer
PAUSE_S = 0.3


class SlowBackend(ChatBackend):
    def agent(self) -> Agent:
        search = ToolUse(id="t1", name="search_documents", input={"query": "new bridge"})
        answer = [*(TextDelta(w) for w in WORDS), TurnEnd("end_turn", 40, len(WORDS))]
        model = ScriptedModel([[search, TurnEnd("tool_use", 12, 3)], answer], pause=PAUSE_S)
        return Agent(self.library, model, self.config)


def store() -> ConversationStore:
    kind, _, where = os.environ["CRASH_STORE"].partition(":")
    if kind == "sqlite":
        return SqliteConversations(Path(where))
    dynamodb = boto3.resource("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    return DynamoConversations(dynamodb.Table(where))


def app() -> FastAPI:
    """The factory uvicorn runs (`--factory tests.api.crash_app:app`)."""
    library = library_of(Path(os.environ["CRASH_INDEX"]), PAGES)
    backend = SlowBackend(library=library, model=None, config=tuned_config())
    saved = store()
    return create_app(lambda: backend, conversations=lambda: saved)
