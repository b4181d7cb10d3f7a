"""Tuned numbers live in `Settings` only: no domain function or config class defaults one."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from docchat.config import Settings

# The settings that were tuned (bench/eval_sweep.py, docs/performance.md "Retrieval quality";
# bench/extractive_answers.py, docs/performance.md "Extractive answers") or that bound an answer; a
# parameter or field of one of these names takes the settings' value.
TUNED = (
    "top_k",
    "candidates",
    "fusion",
    "vector_weight",
    "sentence_weight",
    "sentence_words",
    "chunk_size",
    "chunk_overlap",
    "max_rounds",
    "max_tokens",
    "answer_threshold",
    "quote_similarity_weight",
    "quote_heading_weight",
    "quote_rank_weight",
    "quote_phrase_weight",
    "quote_opening_weight",
    "quote_section_weight",
    "quote_number_bonus",
    "quote_diversity",
)
# Where the domain and the evaluation take them (adapters take none of them).
MODULES = (
    "docchat.answer.agent",
    "docchat.answer.citations",
    "docchat.answer.extractive",
    "docchat.answer.tools",
    "docchat.evaluate.beir",
    "docchat.evaluate.corpus",
    "docchat.evaluate.qa",
    "docchat.ingest.chunk",
    "docchat.ingest.failures",
    "docchat.ingest.local",
    "docchat.ingest.stages",
    "docchat.ingest.steps",
    "docchat.search.hybrid",
    "docchat.search.library",
    "docchat.search.rerank",
)


def _callables(module_name: str) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every function and class defined in the module, and every method of its classes."""
    module = importlib.import_module(module_name)
    for name, thing in vars(module).items():
        if getattr(thing, "__module__", None) != module_name:
            continue
        if inspect.isfunction(thing):
            yield f"{module_name}.{name}", thing
        elif inspect.isclass(thing):
            yield f"{module_name}.{name}", thing
            for method_name, method in vars(thing).items():
                if inspect.isfunction(method):
                    yield f"{module_name}.{name}.{method_name}", method


def _tuned_defaults(target: Callable[..., Any]) -> dict[str, Any]:
    """The tuned parameters (or dataclass fields) that have a default."""
    found: dict[str, Any] = {}
    if dataclasses.is_dataclass(target):
        for f in dataclasses.fields(target):
            if f.name in TUNED and f.default is not dataclasses.MISSING:
                found[f.name] = f.default
        return found
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return found
    for p in parameters:
        if p.name in TUNED and p.default is not inspect.Parameter.empty:
            found[p.name] = p.default
    return found


def test_tuned_names_are_settings() -> None:
    assert set(TUNED) <= set(Settings.model_fields)


@pytest.mark.parametrize("module_name", MODULES)
def test_no_tuned_default_outside_the_settings(module_name: str) -> None:
    # Given every function, class and method of a domain module
    # When their tuned parameters are inspected
    defaults = {
        name: found
        for name, target in _callables(module_name)
        if (found := _tuned_defaults(target))
    }

    # Then none has a default that could drift from the settings'
    assert defaults == {}


def test_the_check_sees_a_default() -> None:
    def drifted(*, candidates: int = 50, other: int = 1) -> None: ...

    @dataclasses.dataclass
    class Drifted:
        top_k: int = 5

    assert _tuned_defaults(drifted) == {"candidates": 50}
    assert _tuned_defaults(Drifted) == {"top_k": 5}


def test_the_agent_takes_the_quote_weights_from_the_settings() -> None:
    from docchat.answer.extractive import QuoteWeights
    from docchat.wiring import agent_config

    names = [f.name for f in dataclasses.fields(QuoteWeights)]
    changed = Settings(**{name: 0.5 + n for n, name in enumerate(names)})

    weights = agent_config(changed, index_sleeps=False).quote_weights

    assert dataclasses.asdict(weights) == {name: 0.5 + n for n, name in enumerate(names)}
    assert set(names) <= set(TUNED)
