"""Feedback on saved answers: each user rates the answers of their own conversations.

GET /conversations/{id}/feedback                      the conversation's rated answers, each with
                                                      its question, citations and rating
PUT|DELETE /conversations/{id}/answers/{n}/feedback   rate the answer at position n among the
                                                      conversation's messages (counted from 0, as
                                                      GET /conversations/{id} lists them), or
                                                      clear its rating

Another user's conversation is not found, exactly as on the conversation routes. A rating keeps
the version of each cited document the caller may read when rating, and goes when its answer is
asked again or the conversation is deleted.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field, field_validator

from docchat.answer.conversations import now, ratings_of
from docchat.limits import MAX_FEEDBACK_CHARS
from docchat.models import Citation, Feedback, RatedAnswer
from docchat.serve.errors import documented
from docchat.serve.routes.conversations import ConversationId, not_found
from docchat.serve.state import AppState, State

router = APIRouter(prefix="/conversations", tags=["conversations"])
Position = PathParam(ge=0, description="the answer's position among the conversation's messages")


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(strict=True)

    rating: Literal["up", "down"]
    comment: str = Field(
        "",
        max_length=MAX_FEEDBACK_CHARS,
        description=f"what was right or wrong, at most {MAX_FEEDBACK_CHARS} characters",
    )

    @field_validator("comment")
    @classmethod
    def _trimmed(cls, comment: str) -> str:
        return comment.strip()


class Ratings(BaseModel):
    ratings: list[RatedAnswer]


class FeedbackCleared(BaseModel):
    id: str
    position: int
    status: Literal["cleared"] = "cleared"


@router.get("/{conversation_id}/feedback", responses=documented(404, 422, 501, 503, 507))
def ratings(http: Request, state: State, conversation_id: str = ConversationId) -> Ratings:
    """The caller's ratings of this conversation's answers."""
    found = state.conversations.ratings(state.user(http), conversation_id)
    if found is None:
        raise not_found(conversation_id)
    return Ratings(ratings=found)


@router.put(
    "/{conversation_id}/answers/{position}/feedback",
    responses=documented(404, 409, 501, 503, 507, body=True),
)
def rate(
    http: Request,
    body: FeedbackRequest,
    state: State,
    conversation_id: str = ConversationId,
    position: int = Position,
) -> RatedAnswer:
    """Rate one answer up or down, with an optional comment; a second rating replaces the first."""
    user = state.user(http)
    saved = state.conversations.conversation(user, conversation_id)
    if saved is None:
        raise not_found(conversation_id)
    cited = saved.messages[position].citations if position < len(saved.messages) else []
    feedback = Feedback(
        rating=body.rating, comment=body.comment, at=now(), versions=_versions(http, state, cited)
    )
    rated = state.conversations.rate(user, conversation_id, position, feedback)
    if rated is None:
        raise not_found(conversation_id)
    [answer] = [r for r in ratings_of(rated) if r.position == position]
    return answer


@router.delete(
    "/{conversation_id}/answers/{position}/feedback",
    responses=documented(404, 422, 501, 503, 507),
)
def clear(
    http: Request, state: State, conversation_id: str = ConversationId, position: int = Position
) -> FeedbackCleared:
    """Clear the caller's rating of one answer (an answer without one stays as it is)."""
    if state.conversations.rate(state.user(http), conversation_id, position, None) is None:
        raise not_found(conversation_id)
    return FeedbackCleared(id=conversation_id, position=position)


def _versions(http: Request, state: AppState, cited: list[Citation]) -> dict[str, str]:
    """The version of each cited document the caller may read now (one they may no longer
    read, or that is gone, is left out: a rating says nothing of what the caller cannot see)."""
    if not cited:
        return {}
    library = state.reader(http).library
    versions: dict[str, str] = {}
    for doc_id in dict.fromkeys(c.doc_id for c in cited):
        record = library.document(doc_id)
        if record is not None and record.version:
            versions[doc_id] = record.version
    return versions
