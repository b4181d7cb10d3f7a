"""What an answer used and cost (issue 46): the tokens of every model call, as the recorded
responses' own `usage` fields say, priced at answer/prices.py's list prices, in the `done` event
and in /v1's usage. The *_cached fixtures are the recorded turns with a prompt cache's counts
(Claude's `cache_creation_input_tokens` / `cache_read_input_tokens` in `message_start`;
OpenAI's `prompt_tokens_details.cached_tokens`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from docchat.answer.agent import Agent, ExtractiveAnswerer
from docchat.answer.events import DoneEvent, Timings
from docchat.answer.prices import LIST_PRICES, Price, Prices, load_prices
from docchat.errors import ConfigError
from docchat.search.library import Library
from docchat.serve.openai_api import CompletionUsage
from tests.api.test_claude_chat import FIXTURES, Recorded, _claude, manual
from tests.api.test_openai_chat import ReplayServer, _local_model
from tests.chatkit import tuned_config

__all__ = ["manual"]  # the fixture, imported


def _claude_usage(*names: str) -> dict[str, int]:
    """The usage the recorded Claude streams report: `message_start`'s input counts and the
    last `message_delta`'s output count, of each turn."""
    total = {"input": 0, "read": 0, "written": 0, "output": 0}
    for name in names:
        for line in (FIXTURES / name).read_text().splitlines():
            if not line.startswith("data: "):
                continue
            data = json.loads(line[6:])
            if data["type"] == "message_start":
                usage = data["message"]["usage"]
                total["input"] += usage["input_tokens"]
                total["read"] += usage.get("cache_read_input_tokens", 0)
                total["written"] += usage.get("cache_creation_input_tokens", 0)
            elif data["type"] == "message_delta":
                total["output"] += data["usage"]["output_tokens"]
    return total


def _done(events: list[Any]) -> DoneEvent:
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done


def test_a_claude_answer_reports_its_recorded_usage_and_its_list_price(manual: Library) -> None:
    turns = ("tool_use_turn_cached.sse", "text_turn_cached.sse")
    agent = Agent(manual, _claude(Recorded(*turns)), tuned_config(top_k=2))

    usage = _done(list(agent.run([{"role": "user", "content": "How tight?"}]))).usage

    recorded = _claude_usage(*turns)
    assert recorded["read"] > 0 and recorded["written"] > 0  # the fixtures hold both
    assert usage.input_tokens == recorded["input"] + recorded["read"] + recorded["written"]
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (
        recorded["read"],
        recorded["written"],
    )
    assert usage.output_tokens == recorded["output"]
    # Sonnet 4.6's list prices (USD per million tokens): 3 input, 0.30 cache hits, 3.75
    # 5-minute cache writes, 15 output
    expected = (
        recorded["input"] * 3
        + recorded["read"] * 0.30
        + recorded["written"] * 3.75
        + recorded["output"] * 15
    ) / 1_000_000
    assert usage.cost_usd == pytest.approx(expected, abs=1e-6)


def test_a_local_models_answer_has_its_tokens_and_a_cost_only_when_priced(
    manual: Library, tmp_path: Path
) -> None:
    asked = [{"role": "user", "content": "How tight?"}]
    with ReplayServer("tool_call_split.sse", "answer_turn_cached.sse") as server:
        unpriced = Agent(manual, _local_model(server.base_url), tuned_config(top_k=2))
        usage = _done(list(unpriced.run(asked))).usage  # type: ignore[arg-type]
    # The recorded usage: 412 + 903 prompt tokens (768 of them from the cache), 27 + 31 out
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (1315, 58, 768)
    assert usage.cost_usd is None  # no list price names qwen3:8b: unknown, not a guess

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"qwen3": {"input": 0.1, "output": 0.4, "cache_read": 0.01}}))
    config = tuned_config(top_k=2)
    config = type(config)(**{**config.__dict__, "prices": load_prices(str(prices))})
    with ReplayServer("tool_call_split.sse", "answer_turn_cached.sse") as server:
        priced = Agent(manual, _local_model(server.base_url), config)
        usage = _done(list(priced.run(asked))).usage  # type: ignore[arg-type]
    expected = ((1315 - 768) * 0.1 + 768 * 0.01 + 58 * 0.4) / 1_000_000
    assert usage.cost_usd == pytest.approx(expected, abs=1e-6)

    # /v1's usage says the same, in OpenAI's fields
    timings = Timings(total_ms=1, retrieval_ms=1, first_token_ms=None)
    done = DoneEvent(mode="model", usage=usage, timings=timings)
    told = CompletionUsage.of(done)
    assert (told.prompt_tokens, told.completion_tokens, told.total_tokens) == (1315, 58, 1373)
    assert told.prompt_tokens_details.cached_tokens == 768
    assert told.cost_usd == usage.cost_usd


def test_an_extractive_answer_costs_nothing(manual: Library) -> None:
    answerer = ExtractiveAnswerer(manual, tuned_config(top_k=2))

    usage = _done(list(answerer.run([{"role": "user", "content": "head bolts torque"}]))).usage

    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (0, 0, 0.0)


@pytest.mark.parametrize(
    "model_id",
    [
        "global.anthropic.claude-sonnet-4-6",
        "us.anthropic.claude-sonnet-4-6",
        "anthropic.claude-sonnet-4-6",
        "claude-sonnet-4-6",
        "arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-sonnet-4-6",
    ],
)
def test_a_models_price_is_found_by_any_of_its_names(model_id: str) -> None:
    assert Prices(overrides={}).price_of(model_id) == LIST_PRICES["claude-sonnet-4-6"]


def test_the_longest_matching_name_and_the_regions_override_win() -> None:
    regional = Price(input=3.3, output=16.5)
    listed = Prices(overrides={})
    prices = Prices(overrides={"anthropic.claude-sonnet-4-6@eu-west-1": regional})

    assert (
        Prices(overrides={}).price_of("claude-opus-4-1-20250805") == LIST_PRICES["claude-opus-4-1"]
    )
    assert Prices(overrides={}).price_of("claude-opus-4-20250514") == LIST_PRICES["claude-opus-4"]
    assert prices.price_of("eu.anthropic.claude-sonnet-4-6") == LIST_PRICES["claude-sonnet-4-6"]
    eu = Prices(overrides=prices.overrides, region="eu-west-1")
    assert eu.price_of("eu.anthropic.claude-sonnet-4-6") == regional
    assert listed.price_of("mistral-small") is None


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("not json", "cannot be read as JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"qwen3": {"input": "cheap"}}', "USD per million tokens"),
        ('{"qwen3": {"inputs": 1}}', "USD per million tokens"),
        # a token price needs both sides (a rerank model's entry is its search_unit alone)
        ('{"qwen3": {"input": 1}}', "needs input and output"),
    ],
)
def test_a_bad_prices_file_is_a_clear_error(tmp_path: Path, content: str, said: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)

    with pytest.raises(ConfigError, match=said):
        load_prices(str(path))
