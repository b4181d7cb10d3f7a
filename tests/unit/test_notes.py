"""What is kept of a model's answer as a chunk's note."""

from __future__ import annotations

from docchat.notes import MAX_NOTE_CHARS, one_sentence


def test_a_note_is_one_line_without_a_thinking_models_reasoning() -> None:
    assert one_sentence("  The 2017 10-K of Amazon:\n capital expenditure.  ") == (
        "The 2017 10-K of Amazon: capital expenditure."
    )
    # Qwen3 through an OpenAI-compatible server writes its reasoning inline first
    answer = (
        "<think>\nThe user wants a sentence. The passage is about...\n</think>\n\nAmazon's 10-K."
    )
    assert one_sentence(answer) == "Amazon's 10-K."
    # Out of tokens while still reasoning: no note rather than a piece of reasoning
    assert one_sentence("<think>\nThe passage covers the ferry timetable, so") == ""


def test_a_long_note_is_cut_at_a_word() -> None:
    note = one_sentence("word " * 200)
    assert len(note) <= MAX_NOTE_CHARS and note.endswith("word…")
