"""Feedback on saved answers: each user rates the answers of their own conversations.

GET /conversations/{id}/feedback                      the conversation's rated answers, each with
                                                      its question, citations and rating
PUT|DELETE /conversations/{id}/answers/{n}/feedback   rate the answer at position n among the
                                                      conversation's messages (counted from 0, as
                                                      GET /conversations/{id} lists them), or
                                                      clear its rating

GET /feedback                                         (admins) every user's rated answers as the
                                                      team's question set, JSON lines, as
                                                      `docchat feedback export` writes them
DELETE /feedback                                      (admins) clear every rating

Another user's conversation is not found, exactly as on the conversation routes. A rating keeps
the version of each cited document the caller may read when rating, and goes when its answer is
asked again or the conversation is deleted. Any other caller of /feedback is refused (403).
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request, Response
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field, field_validator

from docchat.answer.conversations import now, ratings_of
from docchat.answer.feedback import every_rated_question, forget_ratings
from docchat.errors import AccessDeniedError
from docchat.limits import MAX_FEEDBACK_CHARS
from docchat.models import Citation, Feedback, RatedAnswer
from docchat.serve.errors import documented
from docchat.serve.routes.conversations import ConversationId, not_found
from docchat.serve.state import AppState, State

router = APIRouter(prefix="/conversations", tags=["conversations"])
team_router = APIRouter(prefix="/feedback", tags=["conversations"])
ADMINS_ONLY = (
    "only an admin may read or clear every user's feedback; your own is at "
    "GET /conversations/{id}/feedback"
)
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


class RatingsCleared(BaseModel):
    cleared: int = Field(description="how many answers' ratings were cleared")


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


_JSON_LINES: dict[int | str, dict[str, object]] = {
    200: {
        "description": "one rated answer per line (docchat.models.RatedQuestion)",
        "content": {"application/jsonl": {"schema": {"type": "string"}}},
    }
}


@team_router.get(
    "", response_class=Response, responses={**_JSON_LINES, **documented(501, 503, 507)}
)
def export(http: Request, state: State) -> Response:
    """(Admins) Every user's rated answers: question, the turns before it, scope, citations and
    rating, one JSON object per line."""
    _admin_only(http, state)
    lines = "".join(q.model_dump_json() + "\n" for q in every_rated_question(state.conversations))
    return Response(
        lines,
        media_type="application/jsonl",
        headers={
            "Cache-Control": "no-store",
            "Content-Disposition": 'attachment; filename="feedback.jsonl"',
        },
    )


@team_router.delete("", responses=documented(501, 503, 507))
def clear_all(http: Request, state: State) -> RatingsCleared:
    """(Admins) Clear every user's ratings; the answers stay in their conversations."""
    _admin_only(http, state)
    return RatingsCleared(cleared=forget_ratings(state.conversations))


def _admin_only(http: Request, state: AppState) -> None:
    if not state.access(http).admin:
        raise AccessDeniedError(ADMINS_ONLY)
