"""Both conversation stores keep the same contract: SQLite (local) and DynamoDB (moto)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from docchat.adapters.dynamodb_conversations import DynamoConversations
from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.answer import conversations
from docchat.answer.conversations import remembered, title_from
from docchat.answer.events import (
    ChatEvent,
    CitationsEvent,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    StatusEvent,
    Timings,
    Usage,
)
from docchat.answer.feedback import every_rated_question, forget_ratings
from docchat.errors import AnswerNotFoundError, ConversationFullError, IndexSchemaError
from docchat.limits import MAX_CONVERSATION_BYTES, MAX_TITLE_CHARS
from docchat.models import Citation, Feedback, RatedAnswer, Scope, StoredMessage
from docchat.ports import ConversationStore
from tests.conftest import table_schema

ANA, BO = "sub-ana", "sub-bo"
CITED = Citation(
    number=1, doc_id="bridges", title="Bridges", source="bridges.pdf", page=2, quote="It opened."
)
EXCHANGE = [
    StoredMessage(role="user", content="When did the bridge open?"),
    StoredMessage(role="assistant", content="In 2004 [1].", citations=[CITED]),
]


def conversations_table(name: str = "conversations", *, region: str = "eu-west-1") -> Any:
    # The template's ConversationsTable: partition key `user` (the Cognito sub), sort key
    # `conversation_id` (a composite primary key:
    # https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.CoreComponents.html#HowItWorks.CoreComponents.PrimaryKey,
    # CreateTable: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_CreateTable.html).
    dynamodb = boto3.resource("dynamodb", region_name=region)
    return dynamodb.create_table(
        TableName=name,
        **table_schema("ConversationsTable"),
    )


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConversationStore]:
    if request.param == "sqlite":
        local = SqliteConversations(tmp_path / "conversations.sqlite3")
        yield local
        local.close()
        return
    request.getfixturevalue("dummy_aws")
    with mock_aws():
        yield DynamoConversations(conversations_table())


def test_conversation_store_keeps_messages_with_their_citations(store: ConversationStore) -> None:
    started = store.start(ANA, "c1", title="Bridges")
    assert (started.id, started.title, started.messages) == ("c1", "Bridges", [])

    store.append(ANA, "c1", EXCHANGE)

    found = store.conversation(ANA, "c1")
    assert found is not None
    assert found.messages == EXCHANGE
    assert found.messages[1].citations[0].page == 2
    assert found.updated >= found.created


def test_conversation_store_start_keeps_an_existing_conversation(store: ConversationStore) -> None:
    store.start(ANA, "c1", title="First title")
    store.append(ANA, "c1", EXCHANGE)

    again = store.start(ANA, "c1", title="Another title")

    assert again.title == "First title"
    assert again.messages == EXCHANGE


def test_conversation_store_lists_newest_first(store: ConversationStore) -> None:
    for name in ("older", "middle", "newer"):
        store.start(ANA, name, title=name.title())
        time.sleep(0.01)  # `updated` has millisecond steps
    store.append(ANA, "older", EXCHANGE)  # now the newest

    listed = store.conversations(ANA)

    assert [c.id for c in listed] == ["older", "newer", "middle"]
    assert [c.title for c in listed] == ["Older", "Newer", "Middle"]


def test_conversation_store_one_user_never_reaches_anothers(store: ConversationStore) -> None:
    store.start(ANA, "shared-id", title="Ana's")
    store.append(ANA, "shared-id", EXCHANGE)

    assert store.conversations(BO) == []
    assert store.conversation(BO, "shared-id") is None
    assert store.rename(BO, "shared-id", title="Bo's now") is None
    assert store.append(BO, "shared-id", EXCHANGE) is None
    assert store.delete(BO, "shared-id") is False
    # Bo's own conversation with the same id is a different one
    assert store.start(BO, "shared-id", title="Bo's").messages == []

    kept = store.conversation(ANA, "shared-id")
    assert kept is not None
    assert (kept.title, kept.messages) == ("Ana's", EXCHANGE)


def test_conversation_store_renames_and_deletes(store: ConversationStore) -> None:
    store.start(ANA, "c1", title="Old")

    renamed = store.rename(ANA, "c1", title="New")
    assert renamed is not None and renamed.title == "New"
    assert store.delete(ANA, "c1") is True
    assert store.conversation(ANA, "c1") is None
    assert store.delete(ANA, "c1") is False
    assert store.rename(ANA, "c1", title="Gone") is None
    assert store.append(ANA, "c1", EXCHANGE) is None


def test_conversation_store_refuses_to_grow_past_its_limit(store: ConversationStore) -> None:
    store.start(ANA, "c1", title="Long")
    big = StoredMessage(role="user", content="x" * (MAX_CONVERSATION_BYTES // 2))
    store.append(ANA, "c1", [big])

    with pytest.raises(ConversationFullError, match="start a new conversation"):
        store.append(ANA, "c1", [big, big])

    found = store.conversation(ANA, "c1")
    assert found is not None and found.messages == [big]


def test_sqlite_conversations_refuse_a_file_of_another_schema(tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite3"
    SqliteConversations(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '9' WHERE key = 'schema'")

    with pytest.raises(IndexSchemaError, match="schema 9"):
        SqliteConversations(path)


def test_conversation_title_from_the_question() -> None:
    assert title_from("  When did\nthe bridge open?  ") == "When did the bridge open?"
    long = title_from("word " * 100)
    assert len(long) <= MAX_TITLE_CHARS and long.endswith("…")


def _answer_events() -> list[ChatEvent]:
    return [
        StatusEvent(stage="started", mode="extractive"),
        DeltaEvent(text="In 2004 "),
        DeltaEvent(text="[1]."),
        CitationsEvent(citations=[CITED]),
        DoneEvent(
            mode="extractive",
            usage=Usage(input_tokens=0, output_tokens=0),
            timings=Timings(total_ms=1, retrieval_ms=1, first_token_ms=1),
        ),
    ]


def test_remembered_saves_the_exchange_before_done_is_sent() -> None:
    saved: list[list[StoredMessage]] = []
    seen: list[str] = []
    for event in remembered(iter(_answer_events()), EXCHANGE[0].content, saved.append):
        seen.append(event.type)
        if event.type == "done":
            assert saved == [EXCHANGE]  # already saved when the client hears `done`

    assert seen == ["status", "delta", "delta", "citations", "done"]


def test_remembered_keeps_a_failed_answer_as_stopped_and_ends_a_full_one_with_an_error() -> None:
    saved: list[list[StoredMessage]] = []
    failed = [*_answer_events()[:2], ErrorEvent(code="model_failed", message="down")]
    assert [e.type for e in remembered(iter(failed), "q", saved.append)][-1] == "error"
    assert saved == [
        [
            StoredMessage(role="user", content="q"),
            StoredMessage(role="assistant", content="In 2004 ", stopped=True),
        ]
    ]

    def full(_: list[StoredMessage]) -> None:
        raise ConversationFullError("the conversation would hold too much: start a new one")

    events = list(remembered(iter(_answer_events()), "q", full))
    assert [e.type for e in events][-2:] == ["citations", "error"]
    last = events[-1]
    assert isinstance(last, ErrorEvent) and last.code == "conversation_full"


def test_conversation_store_replaces_what_follows_after(store: ConversationStore) -> None:
    # Given a conversation of two exchanges
    store.start(ANA, "c1", title="Bridges")
    store.append(ANA, "c1", EXCHANGE)
    again = [
        StoredMessage(role="user", content="And the tunnel?"),
        StoredMessage(role="assistant", content="In 2010.", stopped=True),
    ]
    store.append(ANA, "c1", again)

    # When the second question is asked again (after the first two messages)
    answer = StoredMessage(role="assistant", content="The tunnel opened in 2010.")
    saved = store.append(ANA, "c1", [again[0], answer], after=2)

    # Then its first answer is replaced, not kept beside the new one
    assert saved is not None
    assert saved.messages == [*EXCHANGE, again[0], answer]
    kept = store.conversation(ANA, "c1")
    assert kept is not None and kept.messages == saved.messages
    # and without `after` an exchange goes at the end
    extended = store.append(ANA, "c1", EXCHANGE)
    assert extended is not None and extended.messages == [*EXCHANGE, again[0], answer, *EXCHANGE]


def test_remembered_saves_a_stopped_answer_as_far_as_it_came() -> None:
    saved: list[list[StoredMessage]] = []
    events = remembered(iter(_answer_events()), "When did the bridge open?", saved.append)
    # When the reader stops after the first piece of text (the server closes the generator)
    assert [next(events).type, next(events).type] == ["status", "delta"]
    events.close()

    # Then the question and the text so far are saved, marked stopped, without citations
    assert saved == [
        [
            StoredMessage(role="user", content="When did the bridge open?"),
            StoredMessage(role="assistant", content="In 2004 ", stopped=True),
        ]
    ]


def test_remembered_saves_the_answer_so_far_while_it_streams(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given saves of the answer so far at every piece of text (a server killed mid-answer
    # keeps the last one)
    monkeypatch.setattr(conversations, "SAVE_EVERY_S", 0.0)
    saved: list[list[StoredMessage]] = []

    events = list(remembered(iter(_answer_events()), "q", saved.append))

    # Then each save holds the question and the text so far, marked stopped, until the last
    question = StoredMessage(role="user", content="q")
    assert saved[:2] == [
        [question, StoredMessage(role="assistant", content="In 2004 ", stopped=True)],
        [question, StoredMessage(role="assistant", content="In 2004 [1].", stopped=True)],
    ]
    assert saved[-1] == [
        question,
        StoredMessage(role="assistant", content="In 2004 [1].", citations=[CITED]),
    ]
    assert [e.type for e in events][-1] == "done"


def test_remembered_saves_nothing_of_an_answer_stopped_before_any_text() -> None:
    saved: list[list[StoredMessage]] = []
    events = remembered(iter(_answer_events()), "q", saved.append)
    assert next(events).type == "status"
    events.close()
    assert saved == []


def test_sqlite_conversations_say_a_busy_file_is_busy_like_the_index(tmp_path: Path) -> None:
    # A real SQLITE_BUSY: another connection holds the write lock and this one does not wait.
    from docchat.adapters import sqlite_conversations
    from docchat.adapters.sqlite_errors import storage_error
    from docchat.adapters.sqlite_index import store

    path = tmp_path / "conversations.sqlite3"
    SqliteConversations(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    waiter = sqlite3.connect(path, timeout=0)
    with pytest.raises(sqlite3.OperationalError) as busy:
        waiter.execute("DELETE FROM conversations")
    holder.close()
    waiter.close()

    said = storage_error(busy.value, path, sqlite_conversations._SAYS)
    index_said = storage_error(busy.value, path, store.INDEX_SAYS)

    assert "is busy" in str(said) and "another docchat is writing; retry" in str(said)
    assert type(said) is type(index_said)
    assert str(said).startswith(f"the conversations file {path} is busy")


UP = Feedback(rating="up", comment="Right page.", at=1.5, versions={"bridges": "v1"})


def test_conversation_store_keeps_a_rating_with_its_answer(store: ConversationStore) -> None:
    # Given a saved question and its cited answer
    store.start(ANA, "c1", title="Bridges")
    store.append(ANA, "c1", EXCHANGE)

    # When the user rates the answer (position 1)
    rated = store.rate(ANA, "c1", 1, UP)

    # Then the answer carries the rating, and it reads back with its question and citations
    assert rated is not None and rated.messages[1].feedback == UP
    found = store.conversation(ANA, "c1")
    assert found is not None and found.messages[1].feedback == UP
    assert found.messages[0].feedback is None
    assert store.ratings(ANA, "c1") == [
        RatedAnswer(
            position=1,
            question="When did the bridge open?",
            answer="In 2004 [1].",
            citations=[CITED],
            feedback=UP,
        )
    ]


def test_conversation_store_changes_and_clears_a_rating(store: ConversationStore) -> None:
    store.start(ANA, "c1", title="Bridges")
    store.append(ANA, "c1", EXCHANGE)
    store.rate(ANA, "c1", 1, UP)

    down = Feedback(rating="down", at=2.0)
    store.rate(ANA, "c1", 1, down)
    assert [r.feedback for r in store.ratings(ANA, "c1") or []] == [down]

    store.rate(ANA, "c1", 1, None)
    assert store.ratings(ANA, "c1") == []
    found = store.conversation(ANA, "c1")
    assert found is not None and found.messages == EXCHANGE


def test_conversation_store_rates_only_answers(store: ConversationStore) -> None:
    store.start(ANA, "c1", title="Bridges")
    store.append(ANA, "c1", EXCHANGE)

    for position in (0, 2, -1):
        with pytest.raises(AnswerNotFoundError, match=f"no answer at position {position}"):
            store.rate(ANA, "c1", position, UP)
    assert store.ratings(ANA, "c1") == []


def test_conversation_store_never_rates_another_users_answer(store: ConversationStore) -> None:
    store.start(ANA, "shared-id", title="Ana's")
    store.append(ANA, "shared-id", EXCHANGE)
    store.rate(ANA, "shared-id", 1, UP)

    assert store.rate(BO, "shared-id", 1, Feedback(rating="down", at=3.0)) is None
    assert store.rate(BO, "shared-id", 1, None) is None
    assert store.ratings(BO, "shared-id") is None
    assert [r.feedback for r in store.ratings(ANA, "shared-id") or []] == [UP]


def test_conversation_store_forgets_a_rating_with_its_answer_or_conversation(
    store: ConversationStore,
) -> None:
    # Given a rated answer
    store.start(ANA, "c1", title="Bridges")
    store.append(ANA, "c1", EXCHANGE)
    store.rate(ANA, "c1", 1, UP)

    # When the question is asked again, its new answer is not rated
    again = StoredMessage(role="assistant", content="It opened in 2004 [1].")
    store.append(ANA, "c1", [EXCHANGE[0], again], after=0)
    assert store.ratings(ANA, "c1") == []

    # and a deleted conversation's ratings are gone with it
    store.rate(ANA, "c1", 1, UP)
    assert store.delete(ANA, "c1") is True
    assert store.ratings(ANA, "c1") is None
    store.start(ANA, "c1", title="Bridges again")
    assert store.ratings(ANA, "c1") == []


def test_conversation_store_gives_every_users_rated_answers_as_a_question_set(
    store: ConversationStore,
) -> None:
    # Given two users' conversations: Ana rates a follow-up asked in one collection, Bo rates
    # his first answer, and an unrated conversation
    follow_up = StoredMessage(
        role="user", content="And the tunnel?", scope=Scope(collections=["works"])
    )
    answer = StoredMessage(role="assistant", content="In 2011 [1].", citations=[CITED])
    store.start(ANA, "c1", title="Bridges")
    store.append(ANA, "c1", [*EXCHANGE, follow_up, answer])
    store.rate(ANA, "c1", 3, UP)
    store.start(BO, "c1", title="Bo's")
    store.append(BO, "c1", EXCHANGE)
    down = Feedback(rating="down", comment="Wrong page.", at=4.0)
    store.rate(BO, "c1", 1, down)
    store.start(BO, "c2", title="Unrated")
    store.append(BO, "c2", EXCHANGE)

    # When an admin reads the set
    questions = every_rated_question(store)

    # Then each rated answer is there once, with its user, the turns before its question and
    # the scope the question was asked in
    assert [(q.user, q.conversation_id, q.position) for q in questions] == [
        (ANA, "c1", 3),
        (BO, "c1", 1),
    ]
    ana = next(q for q in questions if q.user == ANA)
    assert ana.question == "And the tunnel?"
    assert [(t.role, t.content) for t in ana.history] == [
        ("user", "When did the bridge open?"),
        ("assistant", "In 2004 [1]."),
    ]
    assert ana.scope == Scope(collections=["works"])
    assert ana.citations == [CITED] and ana.feedback == UP
    bo = next(q for q in questions if q.user == BO)
    assert bo.history == [] and bo.scope is None and bo.feedback == down

    # and deleting the set clears every rating and keeps every answer
    assert forget_ratings(store) == 2
    assert every_rated_question(store) == []
    found = store.conversation(ANA, "c1")
    assert found is not None and [m.content for m in found.messages][3] == "In 2011 [1]."
