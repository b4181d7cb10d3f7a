"""Amount questions and table rows: which questions ask for an amount, which sentences and rows
hold one, which row is named as asked and which of its cells is the asked year's.

Written for financial statements and tuned on FinanceBench's questions and the hand-typed
statements of tests/unit/test_table_quotes.py, test_periods.py and test_shelf.py (several
companies each); COVID-QA's recall is the check that it leaves other questions alone.
"""

from __future__ import annotations

import re
from itertools import pairwise

from docchat.search.concepts import as_asked, names_an_item, other_names
from docchat.search.segments import says_segment, segment_named, segment_scope
from docchat.search.sentences import Span, column_names, row_cells
from docchat.search.terms import terms, words, years
from docchat.search.titles import company_name

# Questions that ask for an amount ("How much…?", "What were the total net sales…?", "revenue
# of…") or a count ("How many stores…?", "the number of employees"): the rows and sentences
# holding an amount for the asked terms are quoted first. One asking where, why, who or when
# asks for something else ("Where did sales grow?").
_AMOUNT_QUESTION = re.compile(
    r"\b(?:how much|how many|number of|what were|totals?|revenues?|sales|income|earnings|"
    r"profits?|loss(?:es)?|expenses?|costs?|spending|prices?|amounts?|margins?|cash|assets|"
    r"liabilities|debts?|dividends?|dollars?|euros?|percent(?:age)?|thousands?|millions?|"
    r"billions?)\b|[$€£¥%]"
)
_COUNT_QUESTION = re.compile(r"\b(?:how many|number of)\b")
# "What drove the increase in inventories?" asks why, however it names an item.
_OTHER = re.compile(
    r"\W*(?:where|why|who|whom|whose|when"
    r"|what (?:drove|drives|caused|causes|explains|led to|contributed to))\b"
)
# An amount in a sentence: a currency sign, a percentage, a scale word, or thousands grouped
# by commas; "2019" alone is a year, not an amount.
_AMOUNT = re.compile(
    r"[$€£¥]\s?\(?\d"
    r"|\d(?:[\d,.]*\d)?\s?(?:%|percent\b|per cent\b|(?:thousand|million|billion|trillion)s?\b)"
    r"|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b",
    re.IGNORECASE,
)
# A table cell holding a number ("$ 118,573", "(1,234)", "23.01", "21 %"), and one holding a year.
_NUMBER_CELL = re.compile(r"[$€£¥]?\s?\(?-?\d[\d,.]*\)?\s?%?")
_YEAR_CELL = re.compile(r"(?:19|20)\d\d")
_PARENTHESES = re.compile(r"\([^()]*\)")
_SEGMENT_WORDS = frozenset(words("segment segments division divisions"))
# A row label word that makes the row the whole company's ("Total", "Consolidated net income").
_WHOLE = terms("total consolidated company")


def asks_amount(question: str) -> bool:
    """Whether `question` asks for an amount: its words say so, or it names a line item ("What
    was 3M's PPNE?"); not when it asks where, why (what drove, what caused), who or when."""
    folded = question.casefold()
    return (
        _AMOUNT_QUESTION.search(folded) is not None or names_an_item(question)
    ) and not _OTHER.match(folded)


def holds_amount(text: str, *, table_row: bool) -> bool:
    """Whether `text` holds an amount; a table row, in a cell past its label that is a number,
    not a year ("| Net operating loss (net of allowance of $102) |  |  |" holds none)."""
    if not table_row:
        return _AMOUNT.search(text) is not None
    return any(
        _NUMBER_CELL.fullmatch(c) and not _YEAR_CELL.fullmatch(c) for c in row_cells(text)[1:]
    )


def named_as_asked(span: Span, question: str, wanted: set[str]) -> int:
    """How many of the question's words a table row's label holds, when it holds no other:
    under the names the statement prints too ("Revenue" for "net sales": `concepts.hints`).
    What the label adds in parentheses (an initialism, "(loss)", "(net of tax)") is not its
    name: "Purchases of property, plant and equipment (PP&E)" names capital expenditure.

    The words naming the row's own company name its document, not the row: asked for "the
    number of Best Buy stores", Best Buy's 10-Q is found by them, and its row "Best Buy" (one
    brand's stores) is named no more than "Outlet Centers" is; "Best Buy Mobile" is named by
    "mobile". So a count's table answers with its "Total" row, which names the one thing a
    question asking how many counts, when no row is named otherwise; and a table of segments
    answers with its row for the whole company (`_whole_as_asked`)."""
    label = _label(span)
    if not label:
        return 0
    if label <= _WHOLE and _whole_as_asked(span, label, question):
        return 1
    if label <= wanted:
        return len(label)
    if label <= wanted | other_names(question):
        return len((label & wanted) | (as_asked(question, row_cells(span.text)[0]) & wanted))
    return 0


def _whole_as_asked(span: Span, label: set[str], question: str) -> bool:
    """Whether a row labelled only by words of a whole (`label`) answers `question` as asked
    for the whole: a count's "Total"; else, on a question not about segments, a row naming the
    whole company ("Total Company", "Consolidated", 3M's business segments' table), or a "Total"
    under a heading about segments (PepsiCo's "… of each division are as follows:"). A bare
    "Total" elsewhere totals what its table lists (revenue deductions, a sales change's parts),
    not the figure asked for."""
    if label == {"total"} and _COUNT_QUESTION.search(question.casefold()):
        return True
    if says_segment(question):
        return False
    return label != {"total"} or says_segment(" ".join(span.chunk.headings))


def _label(span: Span) -> set[str]:
    """The terms of a table row's label without what it adds in parentheses and without the
    words naming the row's own company; none for a sentence."""
    cells = row_cells(span.text) if span.table_row else []
    label = (terms(_PARENTHESES.sub(" ", cells[0])) or terms(cells[0])) if cells else set()
    return label - _own_words(span)


def _own_words(span: Span) -> set[str]:
    return terms(company_name(span.chunk.title))


def figure_scope(span: Span, text: str, *, question: str, wanted: set[str]) -> int:
    """On an amount question, whether the quote `text` of `span` (a sentence, the sentences
    joined to it, or a table row) is the figure of a segment the question names (1), of a
    segment it does not name (-1), or neither (0: the whole company's, or no segment's).

    A figure is a segment's when its passage is headed by a segment's name ("Walmart U.S.
    Segment", "Innovative Medicine segment"; "Total" there is that segment's total), when a
    row's label says "segment" ("Total segment revenues"), when a row under a heading about
    segments ("Net sales by reportable segment") is labelled by a name rather than by the asked
    item or a whole ("Total", "Consolidated"), or when a sentence names a segment ("our RL
    segment reduced our overall operating profit by $17.73 billion") or says "segment" before
    an asked word ("segment operating income increased $0.2 billion"); whether the question
    names it is `docchat.search.segments.segment_scope`'s to say.
    """
    heading, title = " ".join(span.chunk.headings), span.chunk.title
    name = segment_named(heading, title=title)
    segment = bool(name)
    if span.table_row:
        label = _label(span)
        if says_segment(row_cells(text)[0]):  # "Total segment revenues"
            segment = True
        elif not name and says_segment(heading) and label and not label & (_WHOLE | wanted):
            name, segment = label, True
    elif segment_named(text, title=title) or _segment_figure(text, wanted):
        name, segment = segment_named(text, title=title) or name, True
    return segment_scope(name, question) if segment else 0


def _segment_figure(text: str, wanted: set[str]) -> bool:
    """Whether `text` says "segment" before a word the question asks ("segment net sales")."""
    said = words(text)
    return any(w in _SEGMENT_WORDS and after in wanted for w, after in pairwise(said))


def year_figures(row: Span, asked: set[str]) -> tuple[str, ...]:
    """The row's cells under the columns whose header names an asked year, each with its
    column's name from that year on ("2019: 280,522", "2007 % Pos: 0.9"); none for empty
    cells. None either when a value precedes the first year's column under no name: the years
    stand over groups of columns whose cells a header of one row does not assign ("| | |
    Fiscal 2024 | | | Fiscal 2023 | |" over stores at the start, opened, closed and at the end
    of each year)."""
    cells = row_cells(row.text)
    names = column_names(row.table_header)
    first = next((i for i, name in enumerate(names) if years(name) & asked), len(names))
    if any(cell and not name for name, cell in zip(names[1:first], cells[1:first], strict=False)):
        return ()
    figures: list[str] = []
    for name, cell in zip(names, cells, strict=False):
        year = next((y for y in sorted(years(name)) if y in asked), None)
        if year and cell:
            # From the year on; a span ("2021-2023") names the year asked without printing it.
            at = name.find(year)
            figures.append(f"{name[at:] if at >= 0 else name}: {cell}")
    return tuple(figures)


_QUESTION_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _number(text: str) -> str:
    return text.strip().strip("$€£¥()% ").replace(",", "")


def cell_match(row: Span, question: str, wanted: set[str]) -> bool:
    """Whether a table row holds a value the question names, in a column whose name holds a
    word of the question ("Which sample has an Alpha of 89?": the row whose Alpha is 89). A
    year is not such a value: a question names years for other reasons."""
    asked = {_number(n) for n in _QUESTION_NUMBER.findall(question)}
    asked = {n for n in asked if n and not _YEAR_CELL.fullmatch(n)}
    if not asked:
        return False
    names = column_names(row.table_header)
    return any(
        cell and _number(cell) in asked and at < len(names) and bool(terms(names[at]) & wanted)
        for at, cell in enumerate(row_cells(row.text))
    )
