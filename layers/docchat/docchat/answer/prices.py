"""What an answer's model calls cost: list prices per model, in US dollars per million tokens.

The table is Anthropic's list prices ("Model pricing" on
https://platform.claude.com/docs/en/about-claude/pricing, read 2026-12-05: base input, 5-minute
cache writes, cache hits, output). Amazon Bedrock bills Claude per input and output token in the
Region a request is made from (https://aws.amazon.com/bedrock/pricing/, read 2026-12-05: "the
price is calculated basis the region you made the request in"); for the global inference
profiles docchat deploys with that is the same list price. A Region's or a profile's own price
(Bedrock's geography profiles of the newest models are reported to cost more than the global
ones; that page, as read here, does not say), a negotiated price or a local model's cost goes
in DOCCHAT_PRICES_FILE, a JSON object of model id (or its start) to prices, each of which may
be given for one Region as "<model>@<region>":

    {"anthropic.claude-sonnet-4-6@eu-west-1": {"input": 3.3, "output": 16.5,
      "cache_read": 0.33, "cache_write": 4.125}, "qwen3": {"input": 0, "output": 0}}

An answer by a model no entry names has no cost (None), not a guess.

A Bedrock rerank model bills search units (a query of up to 100 passages), counted in each
answer's usage; their price is not on the pages read here (the user guide's "Pricing and search
units" sends to the pricing page, whose stored copy lists no rerank price), so none is kept: an
answer reranked by Bedrock has no cost until DOCCHAT_PRICES_FILE prices the model's search unit,
e.g. {"cohere.rerank-v3-5": {"search_unit": 0.002}} (the reranker running here costs nothing).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from docchat.errors import ConfigError
from docchat.llm import foundation_model_id

MILLION = 1_000_000


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens (per search unit for a rerank model)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    # US dollars per search unit (a reranker's billed query), for a rerank model's entry.
    search_unit: float | None = None

    def of(
        self, *, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0
    ) -> float:
        """The cost of one answer's tokens; `input_tokens` counts the cached ones too."""
        fresh = max(0, input_tokens - cache_read - cache_write)
        total = (
            fresh * self.input
            + cache_read * self.cache_read
            + cache_write * self.cache_write
            + output_tokens * self.output
        )
        return total / MILLION


def _claude(input_price: float, output_price: float) -> Price:
    # Anthropic's page: cache hits 0.1x the base input price, 5-minute cache writes 1.25x.
    return Price(
        input=input_price,
        output=output_price,
        cache_read=round(input_price * 0.1, 6),
        cache_write=round(input_price * 1.25, 6),
    )


#: By the model id's start, after its provider and geography (`anthropic.`, `global.`); the
#: longest start that matches wins, so "claude-opus-4-1" is not priced as "claude-opus-4".
LIST_PRICES: Mapping[str, Price] = {
    "claude-opus-4-6": _claude(5, 25),
    "claude-opus-4-5": _claude(5, 25),
    "claude-opus-4-1": _claude(15, 75),
    "claude-opus-4": _claude(15, 75),
    "claude-sonnet-4-6": _claude(3, 15),
    "claude-sonnet-4-5": _claude(3, 15),
    "claude-sonnet-4": _claude(3, 15),
    "claude-3-7-sonnet": _claude(3, 15),
    "claude-haiku-4-5": _claude(1, 5),
    "claude-3-5-haiku": Price(input=0.8, output=4, cache_read=0.08, cache_write=1),
    "claude-3-haiku": Price(input=0.25, output=1.25, cache_read=0.03, cache_write=0.3),
}


@dataclass(frozen=True)
class Prices:
    """The list prices, and the overrides of DOCCHAT_PRICES_FILE before them."""

    overrides: Mapping[str, Price]
    region: str = ""

    def price_of(self, model_id: str) -> Price | None:
        """The price of `model_id` in this Region, or None when no entry names it."""
        name = _bare(model_id)
        for table in (self.overrides, LIST_PRICES):
            keys = [k for k in table if "@" in k and k.split("@", 1)[1] == self.region]
            keys += [k for k in table if "@" not in k]
            found = _longest_start(name, keys)
            if found is not None:
                return table[found]
        return None

    def cost(
        self,
        model_id: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cache_read: int = 0,
        cache_write: int = 0,
    ) -> float | None:
        price = self.price_of(model_id)
        if price is None:
            return None
        return price.of(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read=cache_read,
            cache_write=cache_write,
        )

    def search_units_cost(self, model_id: str, units: int) -> float | None:
        """What `units` search units of the rerank model `model_id` cost: None unless an
        entry prices its search units (no list price is kept here, see the module's note)."""
        price = self.price_of(model_id)
        if price is None or price.search_unit is None:
            return None
        return units * price.search_unit


def _bare(model_id: str) -> str:
    """A model id without its ARN, geography and provider: 'claude-sonnet-4-6'."""
    name = model_id.rsplit("/", 1)[-1]
    name = foundation_model_id(name)
    return name.removeprefix("anthropic.")


def _longest_start(name: str, keys: list[str]) -> str | None:
    """The key whose model (named any way) starts `name` for longest; one for a Region
    before one for all."""
    matching = [k for k in keys if (start := _bare(k.split("@", 1)[0])) and name.startswith(start)]
    return max(matching, key=lambda k: (len(_bare(k.split("@", 1)[0])), "@" in k), default=None)


def load_prices(path: str, *, region: str = "") -> Prices:
    """The prices with the overrides of the JSON file at `path` ("" for none)."""
    if not path:
        return Prices(overrides={}, region=region)
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"DOCCHAT_PRICES_FILE {path!r} cannot be read as JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"DOCCHAT_PRICES_FILE {path!r} must hold a JSON object of model ids")
    overrides: dict[str, Price] = {}
    for model, fields in raw.items():
        try:
            given = {k: float(v) for k, v in dict(fields).items()}
            if "search_unit" not in given and not {"input", "output"} <= given.keys():
                raise ValueError("a model's entry needs input and output")
            overrides[str(model)] = Price(**given)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"DOCCHAT_PRICES_FILE {path!r}: the prices of {model!r} must be an object of "
                f"input, output, cache_read and cache_write in USD per million tokens, or "
                f"search_unit in USD per search unit ({exc})"
            ) from exc
    return Prices(overrides=overrides, region=region)
