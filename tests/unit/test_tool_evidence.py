"""What the model reads of a search (issue 42): the passages that are mostly boilerplate (an
officer's certification every filing carries) come after the evidence, however the search
ranked them, as the extractive answer quotes them; still there, numbered, to be read.

The shelf is tests/unit/test_shelf.py's: statements and certifications typed from real filings.
"""

from __future__ import annotations

import pytest

from docchat.answer.agent import Agent
from docchat.answer.events import SourcesEvent
from docchat.llm import TextDelta, ToolUse, TurnEnd
from docchat.search.library import Library
from tests.chatkit import ScriptedModel, tuned_config
from tests.unit.test_shelf import SHELF, filed

QUESTION = "What untrue statement of a material fact did 3M make about its capital expenditure?"


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return filed(tmp_path_factory.mktemp("shelf"), SHELF)


def test_the_search_tool_result_lists_evidence_before_a_certification_that_outranked_it(
    shelf: Library,
) -> None:
    # Given a question whose words are the certification's: the search scores it best
    model = ScriptedModel(
        [
            [
                ToolUse(id="t1", name="search_documents", input={"query": QUESTION}),
                TurnEnd("tool_use"),
            ],
            [TextDelta("3M made none [1]."), TurnEnd("end_turn")],
        ]
    )

    events = list(Agent(shelf, model, tuned_config()).run([{"role": "user", "content": QUESTION}]))

    [sources] = [e for e in events if isinstance(e, SourcesEvent)]
    certification = next(p for p in sources.passages if "certify that" in p.text)
    evidence = next(p for p in sources.passages if "(1,577)" in p.text)
    assert certification.score > evidence.score
    # Then the model reads the evidence first, and the certification still, after it
    result = model.calls[1]["messages"][-1]["content"][0]["content"]
    assert evidence.number == 1 and result.index("(1,577)") < result.index("certify that")
    assert certification.number == len(sources.passages)


def test_a_passage_holding_evidence_beside_a_certification_keeps_its_rank(
    shelf: Library,
) -> None:
    # Best Buy's 10-Q is one passage: its cover, the store count and the certification. Only a
    # passage whose text is mostly boilerplate goes last.
    question = "How many stores did Best Buy operate at the end of Q2 of FY2024?"

    found = shelf.search(question, top_k=3)

    assert "969 stores" in found.passages[0].chunk.text
