"""POST /chat: the answer as Server-Sent Events (status, tool_call, sources, delta, citations,
then done or error), optionally saved in one of the caller's conversations.

A saved conversation gets the question before the answer starts, and the answer as far as it has
come while it streams (marked `stopped` until it is done): a server that dies mid-answer leaves
the question and the answer so far, shown as stopped, not a conversation without its question.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, field_validator

from docchat.answer.conversations import remembered, title_from
from docchat.answer.events import ChatEvent, sse
from docchat.limits import (
    CONVERSATION_ID_PATTERN,
    MAX_DOC_IDS,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES,
    MAX_TOTAL_CHARS,
)
from docchat.llm import Message
from docchat.models import Scope, StoredMessage
from docchat.ports import ConversationStore
from docchat.serve.errors import documented
from docchat.serve.observe import logged_answer
from docchat.serve.routes.documents import check_doc_ids
from docchat.serve.schema import NOT_BLANK, WHOLE, event_stream
from docchat.serve.state import State
from docchat.serve.streaming import EventStream, streamed

router = APIRouter(tags=["chat"])
logger = logging.getLogger(__name__)
Saver = Callable[[list[StoredMessage]], None]
# A conversation holds a question: a message of the user's.
ASKED: dict[str, Any] = {"properties": {"role": {"const": "user"}}, "required": ["role"]}
EVENT_TYPES = [str(kind.model_fields["type"].default) for kind in get_args(get_args(ChatEvent)[0])]


class ChatMessage(BaseModel):
    model_config = ConfigDict(strict=True)

    role: Literal["user", "assistant"]
    content: str = Field(
        min_length=1, max_length=MAX_MESSAGE_CHARS, json_schema_extra={"pattern": NOT_BLANK}
    )

    @field_validator("content")
    @classmethod
    def _not_blank(cls, content: str) -> str:
        if not content.strip():
            raise ValueError("the message is only white space: write something")
        return content


class ChatRequest(BaseModel):
    """The conversation, an optional document filter, and an optional saved conversation the
    question and its answer are added to: after its first `after` saved messages when given
    (what the page shows before the question; a saved answer beyond them, asked again or
    stopped, is replaced), else at its end. The question is the conversation's last user
    message; an assistant message after it is an answer being asked for again, which the
    model does not see."""

    model_config = ConfigDict(strict=True)

    messages: list[ChatMessage] = Field(
        min_length=1, max_length=MAX_MESSAGES, json_schema_extra={"contains": ASKED}
    )
    doc_ids: list[str] | None = Field(None, max_length=MAX_DOC_IDS)
    scope: Scope | None = Field(
        None,
        description="the collections (and documents) to answer from; by default every "
        "collection you may read. Saved with the question in a conversation",
    )
    conversation_id: str | None = Field(None, pattern=CONVERSATION_ID_PATTERN)
    after: Annotated[int, Field(ge=0), WHOLE] | None = None

    @field_validator("messages")
    @classmethod
    def _a_question(cls, messages: list[ChatMessage]) -> list[ChatMessage]:
        if all(m.role != "user" for m in messages):
            raise ValueError("there is no question: the last message must be the user's question")
        if sum(len(m.content) for m in messages) > MAX_TOTAL_CHARS:
            raise ValueError(f"the conversation is longer than {MAX_TOTAL_CHARS} characters")
        return messages

    def asked(self) -> list[ChatMessage]:
        """The conversation up to its question, the last user message."""
        last = max(n for n, m in enumerate(self.messages) if m.role == "user")
        return self.messages[: last + 1]


_SSE: dict[int | str, dict[str, Any]] = {
    200: event_stream("the answer's events", events=EVENT_TYPES)
}


@router.post(
    "/chat",
    response_class=EventStream,
    responses={**_SSE, **documented(403, 404, 409, 501, 502, 503, 507, body=True)},
)
def chat(body: ChatRequest, http: Request, state: State) -> EventStream:
    """Answer the conversation's last question, streamed as Server-Sent Events."""
    saving = None
    if body.conversation_id is not None:
        saving = (state.user(http), state.conversations, body.conversation_id)
    scope = question_scope(body.scope, body.doc_ids)
    live = state.asker(http, scope)
    check_doc_ids(live, scope.doc_ids)
    asked = body.asked()
    messages: list[Message] = [{"role": m.role, "content": m.content} for m in asked]
    question = asked[-1].content
    kept = scope if scope.collections or scope.doc_ids else None
    save = (
        None if saving is None else question_saved(*saving, question, after=body.after, scope=kept)
    )
    answer = live.agent().run(messages, doc_ids=scope.doc_ids)
    events = state.metered(logged_answer(answer, route="/chat"), http, live, scope)
    if save is not None:
        events = remembered(events, question, save)
    return streamed(http, (sse(e) for e in events), events, answer)


def question_scope(scope: Scope | None, doc_ids: list[str] | None) -> Scope:
    """The scope a question is asked in: `scope`, with `doc_ids` (the older field) as its
    documents when given."""
    scope = scope or Scope()
    if doc_ids:
        return scope.model_copy(update={"doc_ids": list(dict.fromkeys(doc_ids))})
    return scope


def question_saved(
    user: str,
    store: ConversationStore,
    conversation_id: str,
    question: str,
    *,
    after: int | None,
    scope: Scope | None = None,
) -> Saver:
    """Save the question in the conversation now, after its first `after` messages (at its end
    without), and return what saves the answer after it. A conversation too full for the
    question is refused here (409), before any answer."""
    started = store.start(user, conversation_id, title=title_from(question))
    at = len(started.messages) if after is None else min(after, len(started.messages))
    asked = StoredMessage(role="user", content=question, scope=scope)
    store.append(user, conversation_id, [asked], after=at)

    def save(exchange: list[StoredMessage]) -> None:
        # The exchange starts with the question: keep it as saved, with its scope.
        exchange = [asked, *exchange[1:]] if exchange and exchange[0].role == "user" else exchange
        if store.append(user, conversation_id, exchange, after=at) is None:
            logger.info("conversation %s was deleted during the answer", conversation_id)

    return save
