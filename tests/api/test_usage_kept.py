"""Each answer's usage is kept for whoever asked, by collection (issue 46), on /chat and /v1 of
the local server with a users file, and `docchat usage` sums it; a data directory where it
cannot be kept still answers."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from docchat.answer.prices import Price, Prices
from docchat.cli import main
from docchat.config import Settings
from docchat.llm import TextDelta, TurnEnd
from docchat.serve.access import UsersFile, token_sha256
from docchat.wiring.local import guarded_local_app
from tests.api.collectionkit import chat_events
from tests.chatkit import ScriptedModel, ServedApp, local_parts
from tests.conftest import WordEmbedder
from tests.mcpkit import ingested

USERS = {
    "users": [
        {"name": "ana", "token_sha256": token_sha256("ana-token"), "read": ["ferries"]},
        {"name": "bo", "token_sha256": token_sha256("bo-token"), "read": ["bridges"]},
    ]
}
# One turn: the answer, and what the (scripted) model says it used
TURN = [
    TextDelta("It leaves every hour."),
    TurnEnd("end_turn", input_tokens=1000, output_tokens=50, cache_read_tokens=600),
]
PRICE = Price(input=1.0, output=2.0, cache_read=0.1)  # USD per million tokens
COST = ((1000 - 600) * 1.0 + 600 * 0.1 + 50 * 2.0) / 1_000_000


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Settings]]:
    data_dir = tmp_path / "data"
    ingested(data_dir, WordEmbedder(), own_collections=True)
    users_path = tmp_path / "users.json"
    users_path.write_text(json.dumps(USERS))
    settings = Settings(data_dir=data_dir)
    parts = local_parts(settings)
    config = dataclasses.replace(parts.backend.config, prices=Prices(overrides={"scripted": PRICE}))
    backend = dataclasses.replace(parts.backend, model=ScriptedModel([TURN]), config=config)
    app = guarded_local_app(
        settings, lambda: backend, uploads=lambda _: parts.uploads, users=UsersFile.load(users_path)
    )
    server = ServedApp(app)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}", settings
    finally:
        server.stop()
        parts.uploads.close()
        parts.index.close()


def _usage(capsys: pytest.CaptureFixture[str], settings: Settings, *args: str) -> Any:
    assert main(["usage", "--json", "--data-dir", str(settings.data_dir), *args]) == 0
    # The served app's log lines share this process's stdout: the command's is the last.
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_each_answers_usage_is_kept_for_its_user_and_summed(
    served: tuple[str, Settings], capsys: pytest.CaptureFixture[str]
) -> None:
    url, settings = served
    question = {"messages": [{"role": "user", "content": "When does the ferry leave?"}]}
    ana = {"authorization": "Bearer ana-token"}
    chat = httpx.post(f"{url}/chat", json=question, headers=ana, timeout=60)
    assert chat.status_code == 200
    (done,) = [data for kind, data in chat_events(chat.text) if kind == "done"]
    assert done["usage"]["cost_usd"] == pytest.approx(COST)
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="bo-token")
    answer = client.chat.completions.create(model="docchat", **question)  # type: ignore[call-overload]
    assert answer.usage.prompt_tokens_details.cached_tokens == 600
    assert (answer.usage.model_extra or {})["cost_usd"] == pytest.approx(COST)

    by_user = {row["user"]: row for row in _usage(capsys, settings, "--by", "user")}
    assert set(by_user) == {"ana", "bo"}
    for row in by_user.values():
        assert (row["answers"], row["input_tokens"], row["output_tokens"]) == (1, 1000, 50)
        assert row["cache_read_tokens"] == 600 and row["cost_usd"] == pytest.approx(COST)
        assert row["unpriced"] == 0
    # Each answer is put down to the collection the asker reads (the only one it could cite)
    by_collection = _usage(capsys, settings, "--by", "collection")
    assert {row["collection"]: row["answers"] for row in by_collection} == {
        "ferries": 1,
        "bridges": 1,
    }
    assert _usage(capsys, settings, "--by", "user", "--user", "ana")[0]["user"] == "ana"
    (today,) = _usage(capsys, settings, "--days", "1")
    assert today["answers"] == 2 and today["cost_usd"] == pytest.approx(2 * COST)

    # And the table a person reads says the same
    assert main(["usage", "--by", "user", "--data-dir", str(settings.data_dir)]) == 0
    table = capsys.readouterr().out
    assert "ana" in table and "bo" in table and "1,000" in table


def test_an_answer_is_given_where_its_usage_cannot_be_kept(
    served: tuple[str, Settings], capsys: pytest.CaptureFixture[str]
) -> None:
    url, settings = served
    settings.usage_path.mkdir()  # a folder where the file should be: SQLite cannot open it
    question = {"messages": [{"role": "user", "content": "When does the ferry leave?"}]}

    chat = httpx.post(
        f"{url}/chat", json=question, headers={"authorization": "Bearer ana-token"}, timeout=60
    )

    assert chat.status_code == 200 and "event: done" in chat.text


def test_usage_of_a_data_directory_without_answers_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["usage", "--data-dir", str(tmp_path)]) == 0
    assert "no answers kept" in capsys.readouterr().out
    assert main(["usage", "--json", "--data-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out) == []
    with pytest.raises(SystemExit) as refused:
        main(["usage", "--since", "yesterday", "--data-dir", str(tmp_path)])
    assert refused.value.code == 2
    assert "'yesterday' is not a day as YYYY-MM-DD" in capsys.readouterr().err
