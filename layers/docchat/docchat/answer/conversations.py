"""Saved conversations: what one holds, and how a chat's answer is added to one.

A conversation belongs to one user (locally the single user `local`; in the cloud the signed-in
user's Cognito `sub`), and every read and write names that user: another user's conversation
is simply not found. The stores (docchat.ports.ConversationStore) keep each conversation whole,
as one row or item, and refuse one that would grow past MAX_CONVERSATION_BYTES.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence

from docchat.answer.events import ChatEvent, CitationsEvent, DeltaEvent, DoneEvent, ErrorEvent
from docchat.errors import AnswerNotFoundError, ConversationFullError
from docchat.limits import MAX_CONVERSATION_BYTES, MAX_TITLE_CHARS
from docchat.models import Citation, Conversation, Feedback, RatedAnswer, StoredMessage

logger = logging.getLogger(__name__)

#: The one user of a local data directory.
LOCAL_USER = "local"
#: How often an answer being written is saved as far as it has come (a write of the whole
#: conversation each time).
SAVE_EVERY_S = 1.0


def title_from(question: str) -> str:
    """A conversation's first title: the question's first line, shortened at a word."""
    line = " ".join(question.split())
    if len(line) <= MAX_TITLE_CHARS:
        return line or "Conversation"
    cut = line[: MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0]
    return f"{cut}…"


def encoded_messages(messages: Sequence[StoredMessage]) -> str:
    """The messages as the stores keep them (JSON), checked against the size limit."""
    text = json.dumps([m.model_dump(mode="json") for m in messages], ensure_ascii=False)
    size = len(text.encode())
    if size > MAX_CONVERSATION_BYTES:
        raise ConversationFullError(
            f"the conversation would hold {size} bytes, more than the {MAX_CONVERSATION_BYTES} "
            "a saved conversation may: start a new conversation"
        )
    return text


def extended(
    saved: Sequence[StoredMessage], messages: Sequence[StoredMessage], *, after: int | None
) -> str:
    """`messages` after the first `after` of `saved` (all of them without `after`; any beyond
    are replaced), encoded and checked against the size limit like `encoded_messages`."""
    return encoded_messages([*saved[:after], *messages])


def rated(saved: Sequence[StoredMessage], position: int, feedback: Feedback | None) -> str:
    """`saved` with the answer at `position` rated `feedback` (its rating cleared with None),
    encoded and checked like `encoded_messages`. AnswerNotFoundError when no answer is there."""
    if not 0 <= position < len(saved) or saved[position].role != "assistant":
        raise AnswerNotFoundError(
            f"the conversation has no answer at position {position} (it holds {len(saved)} "
            "messages, counted from 0): GET the conversation to see which are answers"
        )
    changed = saved[position].model_copy(update={"feedback": feedback})
    return encoded_messages([*saved[:position], changed, *saved[position + 1 :]])


def rated_positions(conversation: Conversation) -> Iterator[tuple[int, int | None, Feedback]]:
    """Each rated answer's position and rating, with the position of the question before it
    (None for an answer no question comes before)."""
    asked: int | None = None
    for position, message in enumerate(conversation.messages):
        if message.role == "user":
            asked = position
        elif message.feedback is not None:
            yield position, asked, message.feedback


def ratings_of(conversation: Conversation) -> list[RatedAnswer]:
    """The conversation's rated answers, in order, each with the question it answers."""
    messages = conversation.messages
    return [
        RatedAnswer(
            position=position,
            question="" if asked is None else messages[asked].content,
            answer=messages[position].content,
            citations=messages[position].citations,
            feedback=feedback,
        )
        for position, asked, feedback in rated_positions(conversation)
    ]


def decoded_messages(text: str) -> list[StoredMessage]:
    return [StoredMessage.model_validate(m) for m in json.loads(text)]


def now() -> float:
    return round(time.time(), 3)


def remembered(
    events: Iterator[ChatEvent], question: str, save: Callable[[list[StoredMessage]], None]
) -> Iterator[ChatEvent]:
    """`events`, passed on, while `save` keeps the question and the answer as far as it has
    come: marked `stopped` at most every SAVE_EVERY_S while text arrives (so a server that dies
    mid-answer leaves it, shown as stopped), and whole when the answer is done, before `done`
    is sent (a client that reloads on `done` finds it). An answer the client stopped (closing
    this generator) or that failed is saved as far as it had come, marked `stopped`; one with
    no text yet leaves the question alone, as it was saved before the answer started. An
    answer too large to keep ends with an `error` event instead of `done`."""
    text: list[str] = []
    citations: list[Citation] = []
    saved_at = time.monotonic()
    try:
        for event in events:
            if isinstance(event, DeltaEvent):
                text.append(event.text)
                if time.monotonic() - saved_at >= SAVE_EVERY_S:
                    _save_partial(save, _exchange(question, text, citations, stopped=True))
                    saved_at = time.monotonic()
            elif isinstance(event, CitationsEvent):
                citations = list(event.citations)
            elif isinstance(event, ErrorEvent) and "".join(text).strip():
                _save_partial(save, _exchange(question, text, citations, stopped=True))
            elif isinstance(event, DoneEvent):
                try:
                    save(_exchange(question, text, citations))
                except ConversationFullError as exc:
                    yield ErrorEvent(code=exc.code, message=str(exc))
                    return
            yield event
    except GeneratorExit:
        if "".join(text).strip():
            _save_partial(save, _exchange(question, text, citations, stopped=True))
        raise


def _save_partial(
    save: Callable[[list[StoredMessage]], None], exchange: list[StoredMessage]
) -> None:
    """Save an unfinished answer; failing to is no reason to stop it (the final save, or the
    reader, hears of a full conversation)."""
    try:
        save(exchange)
    except ConversationFullError:
        logger.info("the answer so far is too large to save")
    except Exception:
        logger.exception("the answer so far was not saved")


def _exchange(
    question: str, text: list[str], citations: list[Citation], *, stopped: bool = False
) -> list[StoredMessage]:
    return [
        StoredMessage(role="user", content=question),
        StoredMessage(
            role="assistant", content="".join(text), citations=citations, stopped=stopped
        ),
    ]
