"""Extractive answers: verbatim quotes of whole sentences and list items, chosen to answer."""

from __future__ import annotations

from pathlib import Path

from docchat.answer.agent import NOT_FOUND, ExtractiveAnswerer
from docchat.answer.citations import best_quote
from docchat.answer.events import CitationsEvent, DeltaEvent
from docchat.answer.extractive import QuoteWeights, answer_quotes
from docchat.evaluate.qa import verbatim
from docchat.models import Chunk, Passage
from docchat.search.library import distinct
from docchat.search.sentences import chunk_sentences
from tests.chatkit import DEFAULTS, library_of, tuned_config

WEIGHTS = QuoteWeights.of(DEFAULTS)
LIMITATIONS = (
    "Title II of the DMCA adds a new section 512 to the Copyright Act to create four new "
    "limitations on liability for copyright infringement by online service providers. The "
    "limitations are based on the following four categories of conduct by a service provider:\n"
    "1. Transitory communications;\n"
    "2. System caching;\n"
    "3. Storage of information on systems or networks at direction of users;\n"
    "and 4. Information location tools."
)
CACHING = (
    "Section 512(b) limits the liability of service providers for the practice of retaining "
    "copies, for a limited time, of material that has been made available online.\n"
    "The limitation applies to acts of intermediate and temporary storage."
)
WHO_FILES = [
    (
        "Filing for an estate or trust. If you are filing Form 1040NR for a nonresident alien "
        "estate or trust, change the form to reflect the provisions of Subchapter J."
    ),
    (
        "File Form 1040NR if any of the following four conditions applies to you.\n"
        "1. You were a nonresident alien engaged in a trade or business in the U.S. during 2007."
    ),
]


def _chunk(text: str, n: int = 0, *, headings: list[str] | None = None, **extra: object) -> Chunk:
    fields: dict[str, object] = {
        "chunk_id": f"doc:v:{n:05d}",
        "doc_id": "doc",
        "version": "v",
        "source": "doc.pdf",
        "title": "A document",
        "headings": headings or [],
        "page_start": 1,
        "page_end": 1,
        "text": text,
    }
    fields.update(extra)
    return Chunk.model_validate(fields)


def test_quotes_are_whole_sentences_with_us_and_list_numbers_kept() -> None:
    chunk = _chunk(
        LIMITATIONS + "\nYour income is taxed under U.S. tax laws. U.S. Copyright Office."
    )

    texts = [s.text for s in chunk_sentences(chunk)]

    assert "2. System caching;" in texts
    assert "Your income is taxed under U.S. tax laws." in texts
    assert "U.S. Copyright Office." in texts
    assert all(verbatim(text, chunk.text) for text in texts)


def test_best_quote_can_quote_a_short_list_item() -> None:
    # main dropped sentences under 20 characters and list numbers: "System caching;" at best.
    assert _best(_chunk(LIMITATIONS), {"system", "cach"}) == (1, "2. System caching;")


def test_answer_quotes_are_verbatim_on_the_page_they_cite() -> None:
    chunk = _chunk(
        "First page text.\nSecond page: the U.S. rule.\n\\# Not a heading.",
        page_end=2,
        page_breaks=[17],
    )

    quotes = answer_quotes("the U.S. rule heading", [chunk], threshold=0.0, weights=WEIGHTS)

    assert [(q.page, q.text) for q in quotes] == [
        (2, "Second page: the U.S. rule. # Not a heading.")
    ]


def test_answer_quotes_put_the_sentence_opening_the_asked_section_first() -> None:
    passages = [
        _chunk(WHO_FILES[0], 38, headings=["Instructions", "Who Must File"]),
        _chunk(WHO_FILES[1], 37, headings=["Instructions", "Who Must File"]),
    ]

    first = answer_quotes("Who must file Form 1040-NR?", passages, threshold=0.3, weights=WEIGHTS)[
        0
    ]

    assert first.text.startswith("File Form 1040NR if any of the following four conditions")
    assert first.number == 2


def test_answer_quotes_answer_from_the_heading_when_the_text_lacks_the_words() -> None:
    # "caching" is only in the section heading; main answered that nothing matches.
    passages = [_chunk(CACHING, headings=["Limitation for System Caching"])]

    quotes = answer_quotes(
        "safe harbor for caching",
        passages,
        threshold=tuned_config().answer_threshold,
        weights=WEIGHTS,
    )

    assert quotes and quotes[0].text.startswith("Section 512(b) limits the liability")


WIPO = (
    "They provide legal protection that the international copyright community deemed critical "
    "to the safe and efficient exploitation of works on digital networks."
)


def test_answer_quotes_weigh_each_sentences_similarity_with_the_question() -> None:
    # The DMCA alone: "safe" is the only question word in any sentence, so by words the WIPO
    # sentence came first; the reranker's cosine of the caching sentence (embedded after its
    # heading) puts the section that answers first.
    passages = [_chunk(WIPO, 1), _chunk(CACHING, 2, headings=["Limitation for System Caching"])]
    caching = chunk_sentences(passages[1])[0]
    cosines = {
        (passages[0].chunk_id, 0): 0.2,
        (passages[1].chunk_id, caching.start): 0.6,
    }

    by_words = answer_quotes("safe harbor for caching", passages, threshold=0.0, weights=WEIGHTS)
    with_similarity = answer_quotes(
        "safe harbor for caching", passages, threshold=0.0, weights=WEIGHTS, similarity=cosines
    )

    assert by_words[0].text == WIPO
    assert with_similarity[0].text.startswith("Section 512(b) limits the liability")


def test_answer_quotes_leave_out_a_lead_in_ending_in_a_colon() -> None:
    lead_in = _chunk(
        "The limitation applies to acts of intermediate and temporary storage, carried out "
        "through an automatic technical process for the purpose of making the material "
        "available to subscribers who request it. It is subject to the following conditions:"
    )

    texts = [
        q.text
        for q in answer_quotes(
            "conditions of the storage limitation", [lead_in], threshold=0.0, weights=WEIGHTS
        )
    ]

    assert texts and not [t for t in texts if t.endswith(":")], texts


COUNTER_NOTICE = (
    "If the subscriber serves a counter notification complying with statutory requirements, "
    "including a statement under penalty of perjury that the material was removed or disabled "
    "through mistake or misidentification, then unless the copyright owner files an action "
    "seeking a court order against the subscriber, the service provider must put the material "
    "back up within 10-14 business days after receiving the counter notification."
)


def test_answer_quotes_say_when_a_long_sentence_is_quoted_only_in_part(tmp_path: Path) -> None:
    # The DMCA's 413-character sentence was quoted as "… within 10-14 business days after",
    # read as the whole sentence.
    library = library_of(tmp_path / "i.sqlite3", {"dmca": [COUNTER_NOTICE]})

    events = list(
        ExtractiveAnswerer(library, tuned_config()).run(
            [{"role": "user", "content": "when must the provider put the material back up"}]
        )
    )

    text = "".join(e.text for e in events if isinstance(e, DeltaEvent))
    [cited] = [e for e in events if isinstance(e, CitationsEvent)]
    [quote] = [c.quote for c in cited.citations]
    assert COUNTER_NOTICE.startswith(quote) and len(quote) < len(COUNTER_NOTICE)
    assert f"“{quote} …” [1]" in text


def test_answer_quotes_mark_a_sentence_the_chunk_end_cuts_short() -> None:
    # A chunk may end inside a sentence (the next chunk, which overlaps it, holds it whole).
    cut = _chunk(
        "The provider is protected from liability for taking the material down. If the "
        "subscriber serves a counter notification complying with statutory requirements, the "
        "service provider must put the material"
    )

    quotes = answer_quotes("counter notification material", [cut], threshold=0, weights=WEIGHTS)
    whole = answer_quotes(
        "limits liability retaining copies", [_chunk(CACHING)], threshold=0, weights=WEIGHTS
    )

    assert [q.partial for q in quotes if q.text.endswith("put the material")] == [True]
    assert whole and not [q for q in whole if q.partial]


def test_answer_quotes_mark_a_sentence_a_page_break_cuts_short() -> None:
    # `make demo` answered with "… measures that prevent unauthorized access to a copyrighted
    # work and measures that prevent" (the sentence goes on over the page, which the passage
    # ends with).
    first = (
        "Section 1201 divides technological measures into two categories: measures that "
        "prevent unauthorized access to a copyrighted work and measures that prevent"
    )

    quotes = answer_quotes(
        "technological measures categories", [_chunk(first)], threshold=0, weights=WEIGHTS
    )

    assert [(q.page, q.partial) for q in quotes if q.text == first] == [(1, True)], quotes


def test_answer_quotes_go_on_over_a_page_break_to_the_sentences_end() -> None:
    # Issue 42: the rest of the sentence is at the top of the next page of the same passage
    first = (
        "Section 1201 divides technological measures into two categories: measures that "
        "prevent unauthorized access to a copyrighted work and measures that prevent"
    )
    page = _chunk(
        first + "\nunauthorized copying of a copyrighted work.",
        page_end=2,
        page_breaks=[len(first) + 1],
    )

    quotes = answer_quotes(
        "technological measures categories", [page], threshold=0, weights=WEIGHTS
    )

    whole = f"{first} unauthorized copying of a copyrighted work."
    assert [(q.page, q.last.page, q.partial) for q in quotes if q.text == whole] == [
        (1, 2, False)
    ], quotes


WHO_MUST_FILE = (
    "File Form 1040NR if any of the following four conditions applies to you.\n"
    "1. You were a nonresident alien engaged in a trade or business in the United States.\n"
    "You must file even if:\n"
    "a. You have no income from a trade or business conducted in the United States.\n"
    "However, if you have no gross income, do not complete the schedules.\n"
    "Instead, attach a list of the kinds of exclusions you claim.\n"
    "2. You were a nonresident alien not engaged in a trade or business and:\n"
    "a. You received income from U.S. sources that is reportable on lines 76a through 85.\n"
    "3. You represent a deceased person who would have had to file Form 1040NR.\n"
    "4. You represent an estate or trust that has to file Form 1040NR.\n"
    "Exceptions. You do not need to file Form 1040NR if you were a student."
)


def test_answer_quotes_quote_the_list_a_sentence_announces_after_it() -> None:
    # The README's question was answered by "File Form 1040NR if any of the following four
    # conditions applies to you." and then by other sections: conditions 1-3 were never quoted.
    quotes = answer_quotes(
        "Who must file Form 1040-NR?", [_chunk(WHO_MUST_FILE)], threshold=0, weights=WEIGHTS
    )

    assert [q.text[:3] for q in quotes] == ["Fil", "1. ", "2. ", "3. ", "4. "]


def test_answer_quotes_quote_a_colon_lead_in_with_its_bulleted_list() -> None:
    conditions = _chunk(
        "The limitation applies to intermediate and temporary storage of material by a "
        "service provider. It is subject to the following conditions:\n"
        "! The content of the retained material must not be modified.\n"
        "! The provider must comply with rules about refreshing material."
    )

    texts = [
        q.text
        for q in answer_quotes(
            "conditions of the limitation", [conditions], threshold=0, weights=WEIGHTS
        )
    ]

    start = texts.index("It is subject to the following conditions:")
    assert texts[start + 1 : start + 3] == [
        "! The content of the retained material must not be modified.",
        "! The provider must comply with rules about refreshing material.",
    ]


def test_answer_quotes_drop_repeated_text_from_overlapping_chunks() -> None:
    passages = [_chunk(CACHING, 1), _chunk(CACHING, 2, doc_id="copy")]

    texts = [
        q.text
        for q in answer_quotes(
            "limits liability retaining copies", passages, threshold=0.0, weights=WEIGHTS
        )
    ]

    assert texts and len(texts) == len(set(texts))


def test_answer_quotes_refuse_below_the_threshold() -> None:
    quotes = answer_quotes(
        "ferry timetable to the island", [_chunk(CACHING)], threshold=0.3, weights=WEIGHTS
    )

    assert quotes == []


def test_distinct_collapses_the_same_text_in_two_documents() -> None:
    a, b, c = (
        _chunk(CACHING, 1),
        _chunk(" " + CACHING.upper(), 2, doc_id="copy"),
        _chunk(LIMITATIONS, 3),
    )

    kept = distinct([Passage(chunk=x, score=1.0) for x in (a, b, c)])

    assert [p.chunk.chunk_id for p in kept] == [a.chunk_id, c.chunk_id]


def test_library_search_returns_one_result_for_a_document_indexed_twice(tmp_path: Path) -> None:
    library = library_of(
        tmp_path / "i.sqlite3", {"caching": [CACHING], "copy": [CACHING], "other": [LIMITATIONS]}
    )

    found = library.search("retaining copies limited time", top_k=3).passages

    assert len(found) == 2
    assert len({p.chunk.text for p in found}) == 2


def test_extractive_agent_answers_safe_harbor_for_caching(tmp_path: Path) -> None:
    library = library_of(tmp_path / "i.sqlite3", {"dmca": [LIMITATIONS, CACHING]})

    events = list(
        ExtractiveAnswerer(library, tuned_config()).run(
            [{"role": "user", "content": "safe harbor for caching"}]
        )
    )

    text = "".join(e.text for e in events if isinstance(e, DeltaEvent))
    [cited] = [e for e in events if isinstance(e, CitationsEvent)]
    assert NOT_FOUND not in text
    assert "2. System caching;" in [c.quote for c in cited.citations]


def test_best_quote_keeps_abbreviations_and_short_sentences_intact() -> None:
    # main quoted "Your income is exempt from U. tax under a tax treaty." and nothing for Smith.
    chunk = _chunk(
        "Your income is exempt from U.S. tax under a tax treaty. Dr. Smith et al. found it."
    )

    assert _best(chunk, {"income", "exempt", "treaty"}) == (
        1,
        "Your income is exempt from U.S. tax under a tax treaty.",
    )
    assert _best(chunk, {"smith", "found"}) == (1, "Dr. Smith et al. found it.")


def _best(chunk: Chunk, wanted: set[str]) -> tuple[int, str] | None:
    """The page and text of `best_quote`."""
    span = best_quote(chunk, wanted)
    return (span.page, span.text) if span else None


# Three sentences of a 10-K's controls section, which overlapping chunks both hold.
INITIATIVE = (
    "The Company is implementing a multi-year, enterprise-wide initiative to integrate, "
    "simplify and standardize processes and systems for the human resources, information "
    "technology, procurement, supply chain and finance functions.",
    "These are enhancements to support the growth of the Company's financial shared service "
    "capabilities and standardize financial systems.",
    "This initiative is not in response to any identified deficiency or weakness in the "
    "Company's internal control over financial reporting.",
)


def test_no_sentence_is_quoted_twice_from_overlapping_chunks() -> None:
    # Given two chunks that overlap by a sentence (as ingestion's chunk overlap makes them),
    # and the passage that holds the figure
    first, second, third = INITIATIVE
    passages = [
        _chunk(f"Changes in internal control. {first} {second}", 0),
        _chunk(f"{second} {third} Other matters follow here.", 1),
        _chunk(
            "Worldwide sales were $94.9 billion for 2022, an increase of 1.3% as compared to "
            "2021. Sales by U.S. companies were $48.6 billion in 2022.",
            2,
        ),
    ]

    # When a question's quotes are chosen (main quoted the second sentence twice, and the
    # third twice, in four quotes: a JnJ 10-K question's answer did)
    quotes = answer_quotes(
        "Are JnJ's FY2022 financials that of a high growth company?",
        passages,
        threshold=0.0,
        weights=WEIGHTS,
    )

    # Then each sentence is read once, and the figure is still among them
    said = [s for q in quotes for s in INITIATIVE if s in q.text]
    assert len(said) == len(set(said)), [q.text for q in quotes]
    assert any("1.3%" in q.text for q in quotes)


def test_a_quote_sharing_a_sentence_with_a_chosen_one_is_quoted_by_its_other_sentence() -> None:
    # Given a 10-K's dividend sentences in two overlapping chunks: the second sentence is
    # quoted (with the one after it) from the first chunk, and joined to the first sentence
    # in the second
    paid = "The quarterly cash dividend declared by the Board was $0.55 and $0.50 per share in "
    paid += "2022 and 2021, respectively."
    raised = (
        "In December 2022, the Board authorized a 10% increase in the quarterly cash dividend "
        "to $0.605 per share effective in 2023."
    )
    always = "CVS Health Corporation has paid cash dividends every quarter since becoming a public "
    always += "company."
    passages = [
        _chunk(f"Dividends. {raised} {always}", 0),
        _chunk(f"{paid} {raised}", 1),
    ]

    quotes = answer_quotes(
        "Has CVS Health paid dividends to common shareholders in Q2 of FY2022?",
        passages,
        threshold=0.0,
        weights=WEIGHTS,
    )

    # Then the dividend paid is quoted by itself, and no sentence twice (main quoted the
    # raise twice; dropping the second quote whole lost the $0.55)
    texts = [q.text for q in quotes]
    assert paid in texts, texts
    assert sum(raised in t for t in texts) == 1, texts
