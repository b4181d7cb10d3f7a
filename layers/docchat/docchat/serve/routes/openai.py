"""The OpenAI-compatible API (docchat.serve.openai_api has its shapes); errors in OpenAI's shape.

POST /v1/chat/completions  streamed or not; citations in an extra field
GET  /v1/models            the model list (one model, "docchat")
GET  /v1/models/{id}       that model, or 404 as OpenAI answers an unknown one
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from docchat.serve.errors import documented, openai_error
from docchat.serve.observe import logged_answer
from docchat.serve.openai_api import (
    MODEL_NAME,
    Completion,
    CompletionRequest,
    ModelCard,
    ModelList,
    completion,
    completion_chunks,
)
from docchat.serve.routes.chat import question_scope
from docchat.serve.routes.documents import check_doc_ids
from docchat.serve.schema import event_stream
from docchat.serve.state import State
from docchat.serve.streaming import EventStream, streamed

router = APIRouter(prefix="/v1", tags=["openai"])
_STREAMED: dict[int | str, dict[str, Any]] = {
    200: event_stream("the completion, or its chunks when `stream` is true")
}


@router.get("/models", responses=documented(openai=True))
def models() -> ModelList:
    return ModelList()


@router.get("/models/{model}", responses=documented(404, openai=True), response_model=ModelCard)
def model(model: str) -> ModelCard | JSONResponse:
    if model != MODEL_NAME:
        return _no_such_model(model)
    return ModelCard()


def _no_such_model(model: str) -> JSONResponse:
    return openai_error(
        404,
        f"The model '{model}' does not exist: this server serves '{MODEL_NAME}'",
        param="model",
        code="model_not_found",
    )


@router.post(
    "/chat/completions",
    response_model=Completion,
    responses={**_STREAMED, **documented(403, 404, 501, 502, 503, 507, body=True, openai=True)},
)
def completions(
    body: CompletionRequest, http: Request, state: State
) -> Completion | EventStream | JSONResponse:
    """Answer the conversation's last question as an OpenAI chat completion."""
    if body.model != MODEL_NAME:  # as OpenAI answers a model it does not have
        return _no_such_model(body.model)
    scope = question_scope(body.scope, body.doc_ids)
    live = state.asker(http, scope)
    check_doc_ids(live, scope.doc_ids)
    answer = live.agent().run(body.conversation(), doc_ids=scope.doc_ids)
    events = state.metered(logged_answer(answer, route="/v1/chat/completions"), http, live, scope)
    if body.stream:
        chunks = completion_chunks(events, body.model, include_usage=body.include_usage)
        return streamed(http, chunks, events, answer)
    return completion(events, body.model)
