"""The team's rated answers as a question set: read out of every user's conversations for an
admin (`docchat feedback export`, GET /feedback), and deleted by one (`docchat feedback delete`,
DELETE /feedback). `docchat eval feedback` asks them again (docchat.evaluate.feedback).

A rated answer becomes one RatedQuestion: its user, conversation and position, the turns before
it (a follow-up question means nothing without them), the scope its question was asked in, what
was answered and cited, and the rating with the cited documents' versions at the time.
"""

from __future__ import annotations

from collections.abc import Iterator

from docchat.answer.conversations import rated_positions
from docchat.errors import AnswerNotFoundError
from docchat.models import Conversation, RatedQuestion, Turn
from docchat.ports import ConversationStore


def rated_questions(user: str, conversation: Conversation) -> Iterator[RatedQuestion]:
    """The conversation's rated answers, in order, each as a question of the set."""
    messages = conversation.messages
    for position, asked, feedback in rated_positions(conversation):
        if asked is None:
            continue  # an answer with no question before it: nothing to ask again
        question, message = messages[asked], messages[position]
        yield RatedQuestion(
            user=user,
            conversation_id=conversation.id,
            position=position,
            question=question.content,
            history=[Turn(role=m.role, content=m.content) for m in messages[:asked]],
            scope=question.scope,
            answer=message.content,
            citations=message.citations,
            feedback=feedback,
        )


def every_rated_question(store: ConversationStore) -> list[RatedQuestion]:
    """Every user's rated answers, by user, conversation and position (the export's order)."""
    found = [q for user, c in store.every_conversation() for q in rated_questions(user, c)]
    return sorted(found, key=lambda q: (q.user, q.conversation_id, q.position))


def forget_ratings(store: ConversationStore) -> int:
    """Clear every user's ratings (the answers stay in their conversations); how many were
    cleared. A conversation deleted meanwhile, or an answer asked again, is passed over."""
    cleared = 0
    for q in every_rated_question(store):
        try:
            if store.rate(q.user, q.conversation_id, q.position, None) is not None:
                cleared += 1
        except AnswerNotFoundError:
            continue  # the conversation changed since it was read: its answer is gone
    return cleared
