"""Sentence segmentation of page text: abbreviations, numbers, list items and headings."""

from __future__ import annotations

from docchat.search.sentences import is_list_item, sentences


def test_sentences_keep_us_and_other_abbreviations_inside_a_sentence() -> None:
    text = "Dr. Smith et al. moved to the U.S. Copyright Office (see Fig. 2 and No. 4). It helped."

    assert sentences(text) == [
        "Dr. Smith et al. moved to the U.S. Copyright Office (see Fig. 2 and No. 4).",
        "It helped.",
    ]


def test_sentences_keep_decimals_initials_and_latin_abbreviations() -> None:
    text = "J. R. R. Tolkien measured 3.5 mm, e.g. in March. I.e. Twice. Done."

    assert sentences(text) == [
        "J. R. R. Tolkien measured 3.5 mm, e.g. in March.",
        "I.e. Twice.",
        "Done.",
    ]


def test_sentences_quote_list_items_whole_with_their_numbers() -> None:
    text = (
        "The limitations are based on four categories of conduct:\n"
        "1. Transitory communications;\n"
        "2. System caching;\n"
        "and 4. Information location tools.\n"
        "(a) First item. Second sentence."
    )

    assert sentences(text) == [
        "The limitations are based on four categories of conduct:",
        "1. Transitory communications;",
        "2. System caching;",
        "and 4. Information location tools.",
        "(a) First item.",
        "Second sentence.",
    ]


def test_sentences_end_a_heading_at_its_line_and_join_a_wrapped_line() -> None:
    text = (
        "Who Must File\nFile Form 1040NR if any of the\n"
        "following conditions applies. You must file even if:\n• You have no income."
    )

    assert sentences(text) == [
        "Who Must File",
        "File Form 1040NR if any of the\nfollowing conditions applies.",
        "You must file even if:",
        "• You have no income.",
    ]


def test_sentences_end_at_question_and_exclamation_marks_and_closing_quotes() -> None:
    assert sentences("Is it? Yes! “Quoted.” (Section 512(j)). Next.") == [
        "Is it?",
        "Yes!",
        "“Quoted.”",
        "(Section 512(j)).",
        "Next.",
    ]


def test_is_list_item_knows_numbers_letters_and_bullets() -> None:
    assert [
        is_list_item(s) for s in ["2. System caching;", "(a) x", "• x", "2007 was", "U.S. tax"]
    ] == [
        True,
        True,
        True,
        False,
        False,
    ]
