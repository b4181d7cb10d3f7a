"""What is kept of a model's answer as a chunk's note."""

from __future__ import annotations

from docchat.ingest.notes import MAX_NOTE_CHARS, one_sentence


def test_a_note_is_one_line() -> None:
    assert one_sentence("  The 2017 10-K of Amazon:\n capital expenditure.  ") == (
        "The 2017 10-K of Amazon: capital expenditure."
    )


def test_a_long_note_is_cut_at_a_word() -> None:
    note = one_sentence("word " * 200)
    assert len(note) <= MAX_NOTE_CHARS and note.endswith("word…")
