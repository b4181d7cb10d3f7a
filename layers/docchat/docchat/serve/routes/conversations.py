"""Saved conversations: each user's own.

GET /conversations                    the caller's saved conversations (id, title, updated),
                                      newest first
GET|PATCH|DELETE /conversations/{id}  one conversation: its messages with their citations, a new
                                      title, or gone; another user's conversation is not found
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field, field_validator

from docchat.errors import ConversationNotFoundError
from docchat.limits import CONVERSATION_ID_PATTERN, MAX_TITLE_CHARS
from docchat.models import Conversation, ConversationSummary
from docchat.serve.errors import documented
from docchat.serve.schema import NOT_BLANK
from docchat.serve.state import State

router = APIRouter(prefix="/conversations", tags=["conversations"])
ConversationId = PathParam(pattern=CONVERSATION_ID_PATTERN)
_ONE = documented(404, 422, 501, 503, 507)


class ConversationList(BaseModel):
    conversations: list[ConversationSummary]


class RenameRequest(BaseModel):
    model_config = ConfigDict(strict=True)

    title: str = Field(
        min_length=1, max_length=MAX_TITLE_CHARS, json_schema_extra={"pattern": NOT_BLANK}
    )

    @field_validator("title")
    @classmethod
    def _one_line(cls, title: str) -> str:
        if not title.strip():
            raise ValueError("the title is only white space: write something")
        return " ".join(title.split())


class Forgotten(BaseModel):
    id: str
    status: Literal["deleted"] = "deleted"


def not_found(conversation_id: str) -> ConversationNotFoundError:
    return ConversationNotFoundError(
        f"no conversation with id {conversation_id!r}: GET /conversations lists yours"
    )


@router.get("", responses=documented(501, 503, 507))
def conversation_list(http: Request, state: State) -> ConversationList:
    user = state.user(http)
    return ConversationList(conversations=state.conversations.conversations(user))


@router.get("/{conversation_id}", responses=_ONE)
def conversation(
    http: Request, state: State, conversation_id: str = ConversationId
) -> Conversation:
    user = state.user(http)
    found = state.conversations.conversation(user, conversation_id)
    if found is None:
        raise not_found(conversation_id)
    return found


@router.patch("/{conversation_id}", responses=documented(404, 501, 503, 507, body=True))
def rename(
    http: Request, body: RenameRequest, state: State, conversation_id: str = ConversationId
) -> ConversationSummary:
    user = state.user(http)
    renamed = state.conversations.rename(user, conversation_id, title=body.title)
    if renamed is None:
        raise not_found(conversation_id)
    return renamed


@router.delete("/{conversation_id}", responses=_ONE)
def forget(http: Request, state: State, conversation_id: str = ConversationId) -> Forgotten:
    user = state.user(http)
    if not state.conversations.delete(user, conversation_id):
        raise not_found(conversation_id)
    return Forgotten(id=conversation_id)
