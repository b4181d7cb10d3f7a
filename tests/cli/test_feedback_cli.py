"""`docchat feedback export|delete` and `docchat eval feedback` on a real data directory: the
rated answers become a question set, asked again of the index (issue 46)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docchat.adapters.sqlite_conversations import SqliteConversations
from docchat.config import Settings
from docchat.models import Citation, Feedback, StoredMessage
from docchat.serve.access import token_sha256
from tests.cli.run import run_flat
from tests.pdfgen import make_pdf

BRIDGE_Q = "When does the bridge reopen?"
FERRY_Q = "When does the ferry leave?"


@pytest.fixture
def rated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A data directory of two documents whose user rated three answers: the bridge answer as
    docchat gives it, up; a ferry answer that cited the bridge notes, down; and the ferry
    answer as docchat gives it, down all the same."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bridge.pdf").write_bytes(
        make_pdf(
            [
                [("h1", "Bridge notes"), ("body", "The bridge was painted green in 1990.")],
                [("h1", "Repairs"), ("body", "The bridge reopens on Monday after repairs.")],
            ]
        )
    )
    (folder / "ferry.pdf").write_bytes(
        make_pdf([[("h1", "Ferry timetable"), ("body", "The ferry leaves at noon every day.")]])
    )
    data = tmp_path / "data"
    assert run_flat(capsys, "ingest", str(folder), "--data-dir", str(data))[0] == 0

    def asked(question: str) -> list[Citation]:
        code, out, err = run_flat(capsys, "ask", question, "--json", "--data-dir", str(data))
        assert code == 0, err
        return [Citation.model_validate(c) for c in json.loads(out)["citations"]]

    bridge, ferry = asked(BRIDGE_Q), asked(FERRY_Q)
    assert 2 in {c.page for c in bridge} and ferry, (bridge, ferry)
    wrong = bridge[0].model_copy(update={"page": 1, "quote": "The bridge was painted green."})
    store = SqliteConversations(Settings(data_dir=data).conversations_path)
    try:
        exchanges = [
            (BRIDGE_Q, bridge, Feedback(rating="up", comment="right page", at=1.0)),
            (FERRY_Q, [wrong], Feedback(rating="down", comment="wrong document", at=2.0)),
            (FERRY_Q, ferry, Feedback(rating="down", at=3.0)),
        ]
        store.start("local", "c-1", title="Bridges and ferries")
        for n, (question, cited, _) in enumerate(exchanges):
            messages = [
                StoredMessage(role="user", content=question),
                StoredMessage(role="assistant", content="As rated.", citations=cited),
            ]
            store.append("local", "c-1", messages)
            store.rate("local", "c-1", 2 * n + 1, exchanges[n][2])
    finally:
        store.close()
    return data


def test_rated_answers_are_exported_asked_again_and_deleted(
    rated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(rated)]
    # Given the set exported as JSON lines
    exported = tmp_path / "set.jsonl"
    code, _, err = run_flat(capsys, "feedback", "export", "--out", str(exported), *data)
    assert code == 0 and "3 rated answers written" in err
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [(q["question"], q["feedback"]["rating"]) for q in lines] == [
        (BRIDGE_Q, "up"),
        (FERRY_Q, "down"),
        (FERRY_Q, "down"),
    ]
    # a follow-up carries the turns before it
    assert [t["content"] for t in lines[1]["history"]] == [BRIDGE_Q, "As rated."]

    # When they are asked again, from the data directory and from the exported file
    for source in ([], [str(exported)]):
        outcomes = tmp_path / "outcomes.json"
        code, out, err = run_flat(
            capsys, "eval", "feedback", *source, "--json", str(outcomes), *data
        )

        # Then the good answer keeps its page, and of the bad ones the one that cited the
        # wrong document now cites another; the other still cites what it cited
        assert code == 0, err
        said = " ".join(out.split())
        assert "marked good: 1 of 1 still cite the same passages" in said
        assert "marked bad: 1 of 2 now cite others" in said
        found = json.loads(outcomes.read_text())
        assert found["scores"] == {"good": 1, "kept": 1, "bad": 2, "others": 1, "not_asked": 0}
        assert [o["verdict"] for o in found["outcomes"]] == ["kept", "others", "same"]

    # When the set is deleted without --yes, nothing is; with it, every rating is cleared
    code, _, err = run_flat(capsys, "feedback", "delete", *data)
    assert code == 2 and "add --yes" in err
    assert run_flat(capsys, "feedback", "export", *data)[1].count("\n") == 3
    code, out, _ = run_flat(capsys, "feedback", "delete", "--yes", *data)
    assert code == 0 and "3 ratings cleared" in " ".join(out.split())
    assert run_flat(capsys, "feedback", "export", *data)[1] == ""
    code, out, _ = run_flat(capsys, "eval", "feedback", *data)
    assert code == 0 and "no rated answers to ask again" in out
    # and the answers stay in their conversation
    store = SqliteConversations(Settings(data_dir=rated).conversations_path)
    try:
        kept = store.conversation("local", "c-1")
    finally:
        store.close()
    assert kept is not None and len(kept.messages) == 6


def test_each_question_is_asked_as_its_user_when_a_users_file_is_given(
    rated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    users = tmp_path / "users.json"
    users.write_text(
        json.dumps({"users": [{"name": "bo", "token_sha256": token_sha256("t"), "admin": True}]})
    )
    outcomes = tmp_path / "outcomes.json"
    code, out, err = run_flat(
        capsys,
        "eval",
        "feedback",
        "--users",
        str(users),
        "--json",
        str(outcomes),
        "--data-dir",
        str(rated),
    )
    assert code == 0, err
    assert "3 not asked" in " ".join(out.split())
    found = json.loads(outcomes.read_text())["outcomes"]
    assert {(o["verdict"], o["why"]) for o in found} == {
        ("not asked", "its user 'local' is not in the users file")
    }


def test_a_set_that_is_not_one_is_refused_with_its_line(
    rated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exported = tmp_path / "set.jsonl"
    assert (
        run_flat(capsys, "feedback", "export", "--out", str(exported), "--data-dir", str(rated))[0]
        == 0
    )
    first = exported.read_text().splitlines()[0]
    exported.write_text(first + "\n" + '{"question": "no rating"}\n')

    code, out, err = run_flat(capsys, "eval", "feedback", str(exported), "--data-dir", str(rated))

    assert code == 2 and out == ""
    assert f"{exported}, line 2, is not a rated answer" in err
