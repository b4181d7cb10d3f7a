"""Query hints: the other names of what a question asks about, as financial statements print it.

A question's words are often not the statement's: "capital expenditure" is the cash-flow row
"Purchases of property, plant and equipment", "revenue" is "Net sales" or "Total revenues",
"COGS" is "Cost of sales", "the income statement" is "Consolidated Statements of Operations".
Each `CONCEPT` lists the names one line item or statement goes by in US GAAP and IFRS reports
(the Codification's captions and the wording companies use for them), and a measure that is
computed from line items ("free cash flow", "working capital", a ratio) lists the names of what
it is computed from, since that is what the pages print.

The names are not fitted to any one company's filings: they are the standard captions. They
were checked on FinanceBench's questions (patronus-ai/financebench, its "metrics-generated"
questions name a metric and the statement to read it from) and on the hand-typed statements
of tests/unit/test_concepts.py, from several companies each.

`hinted` adds the other names of each concept a question names to the text searched by
keyword (the vector side reads the question as asked); `as_asked` tells the extractive answer
which of the question's words a sentence holds under another name.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass

from docchat.search.terms import terms, words
from docchat.search.variants import initialisms_held, periods_held

# Each row: names of one thing, the first its plainest. A name is matched on stemmed words in
# order ("capital expenditures" is "capital expenditure"), "and" and "&" left out ("property,
# plant & equipment" is "property, plant and equipment"; "PP&E" is the words "pp", "e").
_NAMES: tuple[tuple[str, ...], ...] = (
    (
        "capital expenditure",
        "capex",
        "capital spending",
        "purchases of property plant and equipment",
        "purchases of property and equipment",
        "additions to property plant and equipment",
        "payments for property plant and equipment",
        "acquisition of property plant and equipment",
    ),
    ("revenue", "net sales", "total revenues", "net revenues", "total net sales", "sales"),
    (
        "cost of goods sold",
        "cogs",
        "cost of sales",
        "cost of revenue",
        "cost of products sold",
        "cost of goods and services sold",
        "cost of products",
        "cost of services",
    ),
    (
        "sg&a",
        "selling general and administrative",
        "selling general administrative",
        "selling and administrative expenses",
    ),
    (
        "operating income",
        "operating profit",
        "income from operations",
        "operating earnings",
        "earnings from operations",
        "operating loss",
        "loss from operations",
    ),
    ("net income", "net earnings", "net profit", "net income attributable"),
    # Not operating income: what "operating income" in "Non-operating income" is part of.
    ("non operating income", "nonoperating income", "other income expense"),
    (
        "property plant and equipment",
        "pp&e",
        "ppe",
        "property and equipment",
        "fixed assets",
    ),
    (
        "property plant and equipment net",
        "ppne",
        "net pp&e",
        "net property plant and equipment",
        "property and equipment net",
    ),
    ("depreciation and amortization", "d&a", "depreciation amortization"),
    ("earnings per share", "eps", "net income per share", "earnings per common share"),
    (
        "operating cash flow",
        "cash from operations",
        "cash flow from operations",
        "cash from operating activities",
        "net cash provided by operating activities",
        "cash provided by operations",
        "cash flows from operating activities",
    ),
    ("research and development", "r&d"),
    ("gross profit", "gross margin"),
    ("accounts receivable", "trade receivables", "receivables"),
    ("accounts payable", "trade payables"),
    ("inventory", "inventories", "merchandise inventories"),
    (
        "income tax expense",
        "provision for income taxes",
        "income tax provision",
        "taxes on income",
    ),
    (
        "shareholders equity",
        "stockholders equity",
        "total equity",
        "shareowners equity",
    ),
    ("long term debt", "total debt", "borrowings"),
    ("dividends paid", "cash dividends", "dividends to shareholders"),
    ("share repurchases", "purchases of treasury stock", "repurchases of common stock"),
    ("interest expense", "interest and debt expense"),
    (
        "restructuring costs",
        "restructuring charges",
        "restructuring expenses",
        "restructuring and impairment charges",
        "restructuring and related charges",
    ),
    ("total assets", "assets"),
)
# What questions call a line item and no statement prints: asked by, never searched for (a
# rare word in the keyword search would outweigh the statement's own names).
_JARGON: dict[str, tuple[str, ...]] = {
    "revenue": ("top-line", "topline"),
    "net income": ("bottom-line",),
}
# Statements, by the headings they are printed under.
_STATEMENTS: tuple[tuple[str, ...], ...] = (
    (
        "income statement",
        "p&l",
        "profit and loss",
        "statements of operations",
        "statements of income",
        "statements of earnings",
        "statement of consolidated operations",
    ),
    ("balance sheet", "statement of financial position", "balance sheets"),
    ("cash flow statement", "statements of cash flows", "statement of cash flow"),
)
# The statement that prints each line item (by its plainest name, or a part's name that no
# row lists): where a question about it, or about a measure computed from it, is answered when
# it names no statement. Standard presentation (Regulation S-X 5-02, 5-03; IAS 1, IAS 7): each
# item once, where its amount for the period is reported.
_INCOME, _BALANCE, _CASH = range(3)
_PRINTED_ON: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(
        (
            "revenue",
            "cost of goods sold",
            "sg&a",
            "operating income",
            "net income",
            "non operating income",
            "earnings per share",
            "research and development",
            "gross profit",
            "income tax expense",
            "interest expense",
            "income before income taxes",
        ),
        (_INCOME,),
    ),
    **dict.fromkeys(
        (
            "property plant and equipment",
            "property plant and equipment net",
            "accounts receivable",
            "accounts payable",
            "inventory",
            "shareholders equity",
            "long term debt",
            "total assets",
            "total current assets",
            "total current liabilities",
        ),
        (_BALANCE,),
    ),
    **dict.fromkeys(
        ("capital expenditure", "operating cash flow", "dividends paid", "share repurchases"),
        (_CASH,),
    ),
    # Cash flow statements print it as an adjustment; many income statements do not.
    "depreciation and amortization": (_CASH, _INCOME),
}
# Measures computed from line items: what the pages print them from. A line item this many
# of them are computed from (revenue, net income) does not alone hold any one of them.
SHARED = 4
_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("free cash flow", ("operating cash flow", "capital expenditure")),
    ("working capital", ("total current assets", "total current liabilities")),
    ("current ratio", ("total current assets", "total current liabilities")),
    ("quick ratio", ("total current assets", "total current liabilities", "inventory")),
    ("fixed asset turnover", ("revenue", "property plant and equipment")),
    ("asset turnover", ("revenue", "total assets")),
    ("inventory turnover", ("cost of goods sold", "inventory")),
    ("days payable outstanding", ("cost of goods sold", "accounts payable")),
    ("days inventory outstanding", ("cost of goods sold", "inventory")),
    ("days sales outstanding", ("revenue", "accounts receivable")),
    ("ebitda", ("operating income", "depreciation and amortization")),
    ("return on assets", ("net income", "total assets")),
    ("roa", ("net income", "total assets")),
    ("return on equity", ("net income", "shareholders equity")),
    ("debt to equity", ("long term debt", "shareholders equity")),
    ("effective tax rate", ("income tax expense", "income before income taxes")),
    ("dividend payout ratio", ("dividends paid", "net income")),
    # Gross profit is revenue less the cost of sales, which many statements print instead.
    ("gross margin", ("gross profit", "revenue", "cost of goods sold")),
    ("operating margin", ("operating income", "revenue")),
    ("net profit margin", ("net income", "revenue")),
    ("capex", ("capital expenditure",)),
    # Capital intensity: capital expenditure against revenue, fixed assets against total assets.
    (
        "capital intensive",
        ("capital expenditure", "property plant and equipment", "total assets", "revenue"),
    ),
)


@dataclass(frozen=True)
class Name:
    """A name as written and as its stemmed words, "and" left out."""

    text: str
    key: tuple[str, ...]

    @classmethod
    def of(cls, text: str) -> Name:
        return cls(text, _key(text))


@dataclass(frozen=True)
class Concept:
    """What a question may name (`asked_as`) and the names the pages may print it under
    (`printed_as`): the same names for a line item, its parts' names for a measure."""

    asked_as: tuple[Name, ...]
    # The names of each part a page prints it by: one part for a line item or a statement,
    # one per line item a measure is computed from.
    parts: tuple[tuple[Name, ...], ...]
    # The parts that alone hold it (`Hint.held`): all but those many measures share.
    alone: frozenset[int]
    # The statements (`_STATEMENTS` indices) that print it or its parts.
    printed_on: frozenset[int] = frozenset()

    @property
    def printed_as(self) -> tuple[Name, ...]:
        return tuple(name for part in self.parts for name in part)

    def named_in(self, sequence: tuple[str, ...]) -> Name | None:
        """The longest of the names it is asked by that `sequence` (stemmed words) holds."""
        found = [name for name in self.asked_as if _holds(sequence, name.key)]
        return max(found, key=lambda name: len(name.key)) if found else None


def _key(text: str) -> tuple[str, ...]:
    """`text` as its stemmed words, "and" left out ("&" is not a word); a hyphen parts words
    ("capital-intensive" is "capital intensive")."""
    return tuple(w for w in words(_HYPHENS.sub(" ", text)) if w != "and")


_HYPHENS = re.compile(r"[-\u2010\u2011]")


def _holds(sequence: tuple[str, ...], key: tuple[str, ...]) -> bool:
    n = len(key)
    return any(sequence[i : i + n] == key for i in range(len(sequence) - n + 1))


@functools.cache
def _concepts() -> tuple[Concept, ...]:
    items = {names[0]: tuple(Name.of(n) for n in names) for names in _NAMES}
    one = frozenset({0})
    concepts = [
        Concept(
            (*names, *map(Name.of, _JARGON.get(first, ()))),
            (names,),
            one,
            frozenset(_PRINTED_ON.get(first, ())),
        )
        for first, names in items.items()
    ]
    concepts += [
        Concept(n, (n,), one) for n in (tuple(map(Name.of, names)) for names in _STATEMENTS)
    ]
    shared = Counter(part for _, parts in _PARTS for part in set(parts))
    for measure, parts in _PARTS:
        printed = tuple(items.get(part, (Name.of(part),)) for part in parts)
        alone = frozenset(k for k, part in enumerate(parts) if shared[part] < SHARED)
        on = frozenset(s for part in parts for s in _PRINTED_ON.get(part, ()))
        concepts.append(Concept((Name.of(measure),), printed, alone, on))
    return tuple(concepts)


@dataclass(frozen=True)
class Hint:
    """A concept the question names: the name it used, and those the pages may print instead."""

    asked: Name
    others: tuple[Name, ...]
    concept: Concept

    def held(self, named: set[int]) -> bool:
        """Whether a text naming these of its concept's parts holds it: one that holds it
        alone, or two ("revenue" alone, which many measures are computed from, is not the
        "operating margin"; "Operating income", or "Revenue" and "Cost of sales", are)."""
        return bool(named & self.concept.alone) or len(named) >= 2


@functools.lru_cache(maxsize=4096)
def hints(question: str) -> tuple[Hint, ...]:
    """The concepts `question` names, each with the name used and its other names."""
    sequence = _key(question)
    found: list[Hint] = []
    for concept in _concepts():
        asked = concept.named_in(sequence)
        if asked is not None:
            others = tuple(n for n in concept.printed_as if not _holds(sequence, n.key))
            found.append(Hint(asked, others, concept))
    # "fixed asset turnover" names that, not also "asset turnover".
    return tuple(
        h
        for h in found
        if not any(
            len(o.asked.key) > len(h.asked.key) and _holds(o.asked.key, h.asked.key) for o in found
        )
    )


def hinted(question: str) -> str:
    """`question` with the other names of the concepts it names, for a keyword search."""
    others = dict.fromkeys(n.text for h in hints(question) for n in h.others)
    return " ".join([question, *others]) if others else question


@functools.cache
def _statement_keys() -> frozenset[tuple[str, ...]]:
    return frozenset(Name.of(n).key for names in _STATEMENTS for n in names)


def statement_asked(question: str) -> tuple[tuple[str, ...], ...]:
    """The names (`Name.key`s) of the financial statement `question` says to read ("relying on
    the cash flow statement"): every name it goes by; none when it names no statement."""
    return tuple(
        key
        for h in hints(question)
        if h.asked.key in _statement_keys()
        for key in (h.asked.key, *(n.key for n in h.others))
    )


def statements_printing(question: str) -> tuple[tuple[str, ...], ...]:
    """When `question` names no statement: the names (`Name.key`s) of the statements that print
    the line items it asks about, or those a measure it asks about is computed from ("gross
    margin": the income statement's)."""
    if statement_asked(question):
        return ()
    on = {s for h in hints(question) for s in h.concept.printed_on}
    return tuple(Name.of(n).key for s in sorted(on) for n in _STATEMENTS[s])


def holds_asked(question: str, text: str) -> bool:
    """Whether `text` holds a line item or measure `question` asks about, by any of its names
    (a measure by the parts that hold it: `Hint.held`)."""
    held = _key(text)
    return any(
        hint.concept.printed_on and hint.held(_named_parts(hint, _printed(hint, held)))
        for hint in hints(question)
    )


def _printed(hint: Hint, held: tuple[str, ...]) -> set[tuple[str, ...]]:
    """The names of `hint` (as asked, and its concept's) that `held` (stemmed words) holds as
    that concept's, not inside another item's name (`_names`)."""
    own = {hint.asked.key, *(name.key for part in hint.concept.parts for name in part)}
    return {key for key in own if _names(held, key, own)}


def _named_parts(hint: Hint, printed: set[tuple[str, ...]]) -> set[int]:
    """The parts of `hint`'s concept that one of the `printed` names names."""
    parts = hint.concept.parts
    return {k for k, part in enumerate(parts) if any(n.key in printed for n in part)}


def under_statement(headings: str, names: tuple[tuple[str, ...], ...]) -> bool:
    """Whether `headings` (a passage's title and heading path) name one of the statement's
    `names` ("Consolidated Statement of Cash Flows")."""
    held = _key(headings)
    return any(_holds(held, name) for name in names)


@functools.cache
def _items() -> frozenset[tuple[str, ...]]:
    """The names of line items and measures, as `Name.key`s (not of statements)."""
    items = {Name.of(n).key for names in _NAMES for n in names}
    return frozenset(items | {Name.of(measure).key for measure, _ in _PARTS})


def names_an_item(question: str) -> bool:
    """Whether `question` names a line item or a measure ("capital expenditure", "PPNE",
    "free cash flow"): it asks for an amount."""
    return any(h.asked.key in _items() for h in hints(question))


@functools.lru_cache(maxsize=4096)
def other_names(question: str) -> frozenset[str]:
    """The terms (`docchat.search.terms.terms`) of the other names of what `question` names."""
    return frozenset(t for h in hints(question) for n in h.others for t in terms(n.text))


def as_asked(question: str, text: str) -> set[str]:
    """The question's words (stemmed) that `text` holds under another name: those of "capital
    expenditure" for a row "Purchases of property, plant and equipment", those of a measure
    for the line items it is computed from that hold it (`Hint.held`), an initialism the
    text spells out ("PPNE": `initialisms_held`) and a period it writes another way ("Q2 of
    FY2024" as "second quarter of fiscal 2024": `periods_held`)."""
    held = _key(text)
    found = initialisms_held(question, text) | periods_held(question, text)
    for hint in hints(question):
        printed = _printed(hint, held)
        if hint.held(_named_parts(hint, printed)) and any(n.key in printed for n in hint.others):
            # As the question's terms have it, a hyphen joining words or parting them.
            found.update(hint.asked.key, terms(hint.asked.text))
    return found


def _names(held: tuple[str, ...], key: tuple[str, ...], own: set[tuple[str, ...]]) -> bool:
    """Whether `held` holds `key` other than as part of a longer name of another item (not one of
    `own`): "sales" in "Cost of sales" is cost of goods sold, not revenue."""
    n = len(key)
    for start in range(len(held) - n + 1):
        if held[start : start + n] != key:
            continue
        longer = (k for k in _items() if len(k) > n and k not in own)
        if not any(_covers(held, k, start, start + n) for k in longer):
            return True
    return False


def _covers(held: tuple[str, ...], key: tuple[str, ...], start: int, end: int) -> bool:
    """Whether `key` is held at a place spanning held[start:end]."""
    first = max(0, end - len(key))
    return any(held[i : i + len(key)] == key for i in range(first, min(start, len(held)) + 1))
