"""What a document's title says of it: the company it is about, the company's trading symbol,
the years it covers. Titles of filings come from their covers (docchat.ingest.filings); these
rules were written for those titles and checked on FinanceBench's filings and the hand-typed
shelves of tests/unit/test_shelf.py and test_table_quotes.py (several companies each)."""

from __future__ import annotations

import re
from functools import lru_cache

from docchat.search.terms import years

_NOT_WORD = re.compile(r"[\W_]+")
# A title that names a company: the name, then a corporate suffix, the filing's form, its
# trading symbol or, in a release's headline, what it reports ("Amazon.com, Inc. Form 10-K
# 2019", "The Boeing Company 10-K 2019", "Amcor plc Form 10-Q", "JOHNSON & JOHNSON (JNJ) Form
# 10-K", "Amcor reports fiscal 2023 results").
_COMPANY = re.compile(
    r"^(?:the\s+)?(?P<name>.+?),?\s+(?:(?:inc|incorporated|corp|corporation|company|co|ltd|"
    r"limited|plc|llc|l\.?p|n\.?v|s\.?a|ag|se|group|holdings)\b|form\b|(?:annual|quarterly)\s+"
    r"report\b|(?:10-k|10-q|8-k|20-f|40-f|6-k)\b|\([a-z][a-z0-9.]{0,5}\)|(?:reports?|announces?)\s)",
    re.IGNORECASE,
)
# Words that make the head of a title a report's name, not a company's ("ANNUAL REPORT ON
# FORM 10-K").
_NO_COMPANY = frozenset(
    [
        "annual",
        "quarterly",
        "report",
        "reports",
        "form",
        "table",
        "contents",
        "release",
        "statement",
        "statements",
        "financial",
        "consolidated",
        "notice",
        "proxy",
    ]
)
# Words of a company's name too common to name it alone ("Amazon.com": "com").
_NOT_A_NAME = frozenset(["com", "net", "org", "www", "and", "the", "for"])
# A word written with a capital, as a name is ("Amazon's" in "What were Amazon's sales?").
_CAPITALIZED = re.compile(r"\b\d*[A-Z][\w.&'\u2019-]*")
# The trading symbol a filing's title keeps after the company ("JOHNSON & JOHNSON (JNJ) Form
# 10-K"; docchat.ingest.filings).
SYMBOL = re.compile(r"\(([A-Z][A-Z0-9]{0,4}(?:\.[A-Z])?)\)")


def company_name(title: str) -> str:
    """The company a title names, folded ("amazon com" for "Amazon.com, Inc. Form 10-K
    2019"); "" when it names none."""
    match = _COMPANY.match(title.strip())
    if match is None:
        return ""
    name = folded(match.group("name"))
    return "" if _NO_COMPANY.intersection(name.split()) else name


def company_label(title: str) -> str:
    """The company a title names as the title prints it, with its trading symbol: "American
    Airlines Group Inc. (AAL)"; "" when it names none."""
    match = _COMPANY.match(title.strip())
    if match is None or not company_name(title):
        return ""
    symbols = SYMBOL.findall(title)
    name = title.strip()[: match.end("name")].strip(" ,")
    return name + (f" ({symbols[0]})" if symbols and f"({symbols[0]})" not in name else "")


# A filing's period in its title (docchat.ingest.filings): "fiscal year ended January 1, 2023".
_PERIOD_END = re.compile(
    r"\b(fiscal year|year|quarterly period|quarter) ended (\w+)\.? \d{1,2},? ((?:19|20)\d\d)\b",
    re.IGNORECASE,
)
# A release of a year's results: "results for fourth-quarter and full year 2022", "Reports
# Fourth Quarter Fiscal 2022 Results", "fiscal 2023 results".
_FULL_YEAR = re.compile(r"\b(?:full[ -]year|fourth[ -]?quarter|fiscal (?:19|20)\d\d results)", re.I)
# Months whose fiscal year ends are named for the year before as often as for their own: J&J's
# fiscal 2022 ended on January 1, 2023, Best Buy's fiscal 2023 on January 28, 2023.
_EARLY_MONTHS = ("jan", "feb")


def title_years(title: str) -> set[str]:
    """The years a title's document is about, as questions name them: those it names, and
    the fiscal years its period may be called by. A year ended in January or February may be
    called by the year before; a quarter by the next year too (Amcor's quarter ended December
    31, 2022 is in its fiscal 2023); a release of a year's results by the next year too, whose
    outlook it gives."""
    found = years(title)
    if _FULL_YEAR.search(title) and found:
        # A release of a year's results gives the outlook for the next.
        found.add(str(int(max(found)) + 1))
    for kind, month, year in _PERIOD_END.findall(title):
        if "quarter" in kind.casefold():
            found.add(str(int(year) + 1))
        elif month[:3].casefold() in _EARLY_MONTHS:
            found.add(str(int(year) - 1))
    return found


def names_of(words: list[str]) -> set[str]:
    """The names a company of these (folded) words goes by alone: each word that can name it
    ("amazon", "3m"; not "com"), and, of a name of two words or more, its initials spaced
    ("j j", as "J&J" folds), joined ("jj") and, of two, with an "n" ("jnj"), and the heads of
    its first two words run together ("amex" for American Express, "fedex" for Federal
    Express)."""
    names = {
        w
        for w in words
        if (len(w) >= 3 or (len(w) == 2 and not w.isalpha() and not w.isdigit()))
        and not w.isdigit()
        and w not in _NOT_A_NAME
    }
    spelled = [w for w in words if w not in _NOT_A_NAME and w.isalpha()]
    initials = [w[0] for w in spelled]
    if len(initials) >= 2:
        names.update({" ".join(initials), "".join(initials)})
        if len(initials) == 2:
            names.add("n".join(initials))
    if len(spelled) >= 2 and min(len(w) for w in spelled[:2]) >= 3:
        first, second = spelled[:2]
        names.update({first[:2] + second[:2], first[:3] + second[:2]})
    return names


def capitalized(text: str) -> set[str]:
    """The folded words of `text` that are written with a capital."""
    return {w for found in _CAPITALIZED.findall(text) for w in folded(found).split()}


@lru_cache(maxsize=65_536)
def folded(text: str) -> str:
    """`text` in lower case, its words separated by one space (catalogs fold the same names
    again after every write: they are remembered)."""
    return _NOT_WORD.sub(" ", text.casefold()).strip()


def symbols_of(title: str) -> set[str]:
    """The trading symbols a title keeps, folded ("jnj")."""
    return {s.casefold() for s in SYMBOL.findall(title)}


def listed_company(title: str) -> str:
    """The company a title names with its symbols, for a listing: "johnson johnson (JNJ)"; ""
    when it names none."""
    company = company_name(title)
    symbols = sorted(symbols_of(title))
    return company + (f" ({', '.join(symbols).upper()})" if company and symbols else "")


def about(title: str) -> str:
    """What a title says of its document's company, form, years and date, for a listing: ",
    company johnson johnson (JNJ), form 10-K, years 2022, 2023, date 2023-01-01"; "" when it
    says none of them."""
    company = listed_company(title)
    form = form_of(title)
    covered = sorted(title_years(title))
    day = date_of(title)
    parts = []
    if company:
        parts.append(f"company {company}")
    if form:
        parts.append(f"form {'earnings release' if form == RELEASE else form}")
    if covered:
        parts.append(f"years {', '.join(covered)}")
    if day:
        parts.append(f"date {day}")
    return "".join(f", {p}" for p in parts)


def date_of(title: str) -> str:
    """The last date a title names (a period's end, a report's or release's date) as
    YYYY-MM-DD; "" when it names none."""
    end = period_end(title)
    return "" if end is None else "{:04d}-{:02d}-{:02d}".format(*end)


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# The date a title says its document covers to or was made on: "quarterly period ended July
# 29, 2023", "dated August 30, 2023", "(Jan. 29, 2020)".
_DATED = re.compile(
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (\d{1,2}),? ((?:19|20)\d\d)\b",
    re.IGNORECASE,
)
# "the most recent 10-Q", "the latest quarterly report", "last quarter"; a question's forms
# as written or folded ("10-Q", "10Q", "10 q": the catalog reads what is left of a question
# after a company's name, folded).
_RECENT = re.compile(
    r"\b(?:most recent|latest|last|newest|prior|previous)\s+(?:fiscal\s+)?"
    r"(?:(10[- ]?q|quarter(?:ly)?)|(10[- ]?k|annual|year)|"
    r"(filing|report|8[- ]?k|earnings))",
    re.IGNORECASE,
)
# The form a filing's title names, folded ("... form 10 q, quarterly period ended ...").
_TITLE_FORM = re.compile(r"\bform (10 k|10 q|8 k|20 f|40 f|6 k|11 k|s 1|s 4|def 14a)\b")
# A title that is a release's headline: it reports results or earnings ("Boeing Reports
# Fourth-Quarter Results", "Amcor reports fiscal 2023 results").
_RESULTS = re.compile(r"\b(?:results|earnings)\b")
# The forms a question or a filter names: the form's number ("10-K", "10K", "10 k"), or what
# the form is called ("annual report": a 10-K, or a foreign filer's 20-F or 40-F).
_ASKED_FORM = re.compile(
    r"\b(?:(10[- ]?k)|(10[- ]?q)|(8[- ]?k)|(20[- ]?f)|(40[- ]?f)|(annual report)|"
    r"(quarterly report)|((?:earnings|press|news) release|earnings report))\b",
    re.IGNORECASE,
)
_ASKED = (
    {"10-K"}, {"10-Q"}, {"8-K"}, {"20-F"}, {"40-F"}, {"10-K", "20-F", "40-F"}, {"10-Q"},
    {"release"},
)  # fmt: skip
RELEASE = "release"


def form_of(title: str) -> str:
    """The form of the filing a title names ("10-K", "10-Q", "8-K", ...), RELEASE for a
    release's headline that reports results, "" for any other title."""
    title_folded = folded(title)
    found = _TITLE_FORM.search(title_folded)
    if found:
        return found.group(1).replace(" ", "-", 1).upper()
    return RELEASE if _RESULTS.search(title_folded) else ""


def forms_asked(text: str) -> set[str]:
    """The forms (as `form_of` names them) a question asks about: "in its 10-K", "the 8k
    filing", "the Q2 earnings release"; none when it names no form."""
    return {
        form
        for found in _ASKED_FORM.finditer(text)
        for group, forms in zip(found.groups(), _ASKED, strict=True)
        if group
        for form in forms
    }


def period_end(title: str) -> tuple[int, int, int] | None:
    """The last date a title names, as (year, month, day); None when it names none."""
    found = [
        (int(year), _MONTHS.index(month[:3].casefold()) + 1, int(day))
        for month, day, year in _DATED.findall(title)
    ]
    return max(found) if found else None


def recent_form(question: str) -> str | None:
    """The kind of report a question asks for the most recent of ("quarterly", "annual",
    "any"), or None when it asks for none."""
    found = _RECENT.search(question)
    if found is None:
        return None
    return "quarterly" if found.group(1) else "annual" if found.group(2) else "any"


def is_form(title: str, kind: str) -> bool:
    """Whether a title's document is a report of `kind` (`recent_form`)."""
    folded_title = folded(title)
    if kind == "quarterly":
        return " 10 q" in f" {folded_title}" or "quarter" in folded_title
    if kind == "annual":
        return " 10 k" in f" {folded_title}" or "fiscal year" in folded_title
    return True
