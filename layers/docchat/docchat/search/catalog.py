"""The documents a chat may read, as the registry listed them at one moment (`Catalog`), and
what a question says of which of them it is about: their titles or file names, their company
(by name, ticker or initials), the year, the form, the most recent report of a kind. The rules
read titles as docchat.search.titles does (covers, docchat.ingest.filings); they were written
for filings' titles and checked on FinanceBench's filings and the hand-typed shelves of several
companies in tests/unit/test_shelf.py, test_periods.py and test_table_quotes.py."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from pathlib import PurePosixPath
from types import MappingProxyType

from docchat.models import DocStatus, DocumentRecord
from docchat.search.quarters import quarter_of, quarters_asked, year_end_month
from docchat.search.terms import years
from docchat.search.titles import (
    RELEASE,
    capitalized,
    company_label,
    company_name,
    folded,
    form_of,
    forms_asked,
    is_form,
    names_of,
    period_end,
    recent_form,
    symbols_of,
    title_years,
)


@dataclass(frozen=True)
class Catalog:
    """The INDEXED documents, by id, as the registry listed them at one moment.

    A chat sees a chunk only if its document is INDEXED at exactly the chunk's version: the
    index may still hold chunks of an older version, of a removed document or of a failed run,
    because OpenSearch Serverless shows deletions to searches only after a delay.
    """

    records: Mapping[str, DocumentRecord]

    @classmethod
    def of(cls, records: Iterable[DocumentRecord]) -> Catalog:
        return cls({r.doc_id: r for r in records if r.status == DocStatus.INDEXED})

    def named_in(
        self, query: str, doc_ids: Sequence[str] | None = None, *, shared: bool = True
    ) -> tuple[list[str], str]:
        """The documents (of `doc_ids`, when given) whose title or file name `query` spells
        out, or whose company it names, in the order it names them, and the query without
        those names. A title or file name must be two words or more ("2007 Instruction
        1040-NR", "dmca.pdf"): one word is too often just a word. One word names a company
        when it is written with a capital and, of the companies the titles name ("Amazon.com,
        Inc. Form 10-K 2019"), is in one company's name only ("Amazon").

        Names are tried in the catalog's order, each on what earlier matches left of the
        query; only those whose first two words the query still holds are tried at all. When
        nothing else is named, a name several companies share names each of them (`shared`,
        `ambiguous_in`)."""
        rest = f" {folded(query)} "
        wanted = None if doc_ids is None else set(doc_ids)
        found: list[tuple[int, str]] = []
        tried = (-1, -1)
        while True:
            words = rest.split()
            candidates = [
                name
                for pair in set(pairwise(words))
                for name in self._names.get(pair, ())
                if name[:2] > tried and (wanted is None or name[3] in wanted) and name[2] in rest
            ]
            if not candidates:
                break
            order, slot, key, doc_id = min(candidates)
            found.append((rest.index(key), doc_id))
            rest = rest.replace(key, " ")
            tried = (order, slot)
        named = {doc_id for _, doc_id in found}
        written = capitalized(query)
        companies = self._companies if doc_ids is None else self._companies_of(doc_ids)
        for name, company_docs in companies.items():
            key = f" {name} "
            if key in rest and written.issuperset(name.split()):
                found.extend((rest.index(key), d) for d in company_docs if d not in named)
                named.update(company_docs)
                rest = rest.replace(key, " ")
        if shared and not named:
            for name, companies in self.ambiguous_in(query, doc_ids).items():
                key = f" {name} "
                found.extend((rest.index(key), d) for docs in companies.values() for d in docs)
                rest = rest.replace(key, " ")
        return [doc_id for _, doc_id in sorted(found)], rest.strip()

    def ambiguous_in(
        self, query: str, doc_ids: Sequence[str] | None = None
    ) -> dict[str, dict[str, list[str]]]:
        """The words of `query` that name a company only as one of several ("American" on a
        shelf of American Airlines and American Express), each with those companies (their
        names as titles print them) and their documents: a question naming no company by a
        name of its own searches each such company's documents (`named_in`), and says so. A
        word counts as a company's name written with a capital, as `named_in` reads one; the
        question's first word only as a possessive ("United's"), since a sentence starts with a
        capital whatever its first word is."""
        rest = f" {folded(query)} "
        written = capitalized(query)
        first, *_ = query.split() or [""]
        opening = "" if re.search(r"['\u2019]s\W*$", first) else folded(first)
        wanted = None if doc_ids is None else set(doc_ids)
        shared: dict[str, dict[str, list[str]]] = {}
        for name, companies in self._shared_names.items():
            if f" {name} " not in rest or not written.issuperset(name.split()) or name == opening:
                continue
            for company, docs in companies.items():
                kept = [d for d in docs if wanted is None or d in wanted]
                if kept:
                    shared.setdefault(name, {})[company] = kept
        return {name: companies for name, companies in shared.items() if len(companies) > 1}

    def ambiguity(self, query: str, doc_ids: Sequence[str] | None = None) -> str:
        """What to tell the person when `query` names a company only by a name several share
        (`ambiguous_in`): which companies it may mean, each of which was searched; "" when it
        names none so, or names a company by a name of its own as well."""
        if self.named_in(query, doc_ids, shared=False)[0]:
            return ""
        notes = [
            f"“{name}” may mean {_listed(sorted(companies))}: each was searched; name the "
            "company in full (or by its ticker) to search one."
            for name, companies in self.ambiguous_in(query, doc_ids).items()
        ]
        return " ".join(notes)

    def dated(self, query: str, doc_ids: Sequence[str] | None = None) -> list[str]:
        """The documents (of `doc_ids`, when given) whose title names a year that `query`
        names ("in 2019", "fiscal 2019": "Amazon.com, Inc. Form 10-K, fiscal year ended December
        31, 2019"), beside every other document still to be searched; none when nothing is
        passed over. A year chooses among one company's reports: a 10-K holds the two years
        before its own too, so a title that names another year is passed over only when a title
        of the same company names the asked year. A title naming no year (an 8-K's cover has no
        period) or no company, and the other companies' reports, are never passed over: on a
        shelf of many companies' filings they say nothing of which one a question is about."""
        asked = years(query)
        if not asked:
            return []
        pool = self._pool(doc_ids)
        named = {d: title_years(self.records[d].title) for d in pool}
        return self._chosen(
            pool, {d: bool(asked & found) if found else None for d, found in named.items()}
        )

    def quartered(self, query: str, doc_ids: Sequence[str] | None = None) -> list[str]:
        """The reports (of `doc_ids`, when given) of a fiscal quarter `query` names ("Q2 of
        FY2024", "the first quarter of 2023": `quarters_asked`), beside every other document
        still to be searched; none when nothing is passed over. As a year does (`dated`), a
        quarter chooses among one company's quarterly reports (`quarter_of`, in the company's
        own fiscal calendar as its annual report's title gives it): a report of another quarter
        is passed over only when one of the same company's covers the asked quarter. Annual
        reports, documents of no company or no known quarter, and other companies' documents
        are never passed over."""
        asked = quarters_asked(query)
        if not asked:
            return []
        pool = self._pool(doc_ids)
        covered = {d: self._quarter(d) for d in pool}
        return self._chosen(pool, {d: q in asked if q else None for d, q in covered.items()})

    def of_quarter(self, query: str, doc_ids: Sequence[str]) -> bool:
        """Whether every one of `doc_ids` is a report of a quarter `query` names (as
        `quartered` reads them)."""
        asked = quarters_asked(query)
        return bool(asked and doc_ids) and all(
            self._quarter(d) in asked for d in doc_ids if d in self.records
        )

    @cached_property
    def _year_ends(self) -> dict[str, int]:
        """Each company's fiscal year's last month, as its annual reports' titles give it."""
        ends: dict[str, int] = {}
        for doc_id, record in self.records.items():
            month = year_end_month(record.title)
            if month is not None and self._company[doc_id]:
                ends.setdefault(self._company[doc_id], month)
        return ends

    def formed(self, query: str, doc_ids: Sequence[str] | None = None) -> list[str]:
        """The documents (of `doc_ids`, when given) of a form `query` names ("in its 10-K",
        "the 8-K dated ...", "the earnings release": `forms_asked`), beside every other document
        still to be searched; none when nothing is passed over. As a year does (`dated`), a
        form chooses among one company's documents: a title of another form is passed over only
        when a title of the same company is of the asked form; titles of no company or no
        known form, and other companies' documents, are never passed over."""
        asked = forms_asked(query)
        if not asked:
            return []
        pool = self._pool(doc_ids)
        forms = {d: form_of(self.records[d].title) for d in pool}
        return self._chosen(pool, {d: f in asked if f else None for d, f in forms.items()})

    def _chosen(self, pool: list[str], holds: Mapping[str, bool | None]) -> list[str]:
        """The rule `dated`, `quartered` and `formed` share, over `pool`: `holds[d]` says
        whether d's title names what the question asks (True), names something else of its
        kind (False), or names nothing of it (None). A company with a document that holds it
        has its documents that name something else passed over; documents of no company, or
        that name nothing of the kind, and other companies' documents stay. The pool without
        those passed over; none when nothing is."""
        chosen = {self._company[d] for d in pool if holds[d]} - {""}
        passed_over = {d for d in pool if holds[d] is False and self._company[d] in chosen}
        return [d for d in pool if d not in passed_over] if passed_over else []

    @cached_property
    def _names(self) -> dict[tuple[str, str], list[tuple[int, int, str, str]]]:
        """Each name of two words or more as (record's place, 0 for the title or 1 for the
        file name, " the name folded ", doc_id), by its first two words."""
        names: dict[tuple[str, str], list[tuple[int, int, str, str]]] = {}
        for order, (doc_id, record) in enumerate(self.records.items()):
            for slot, name in enumerate((record.title, PurePosixPath(record.source).name)):
                words = folded(name).split()
                if len(words) >= 2:
                    entry = (order, slot, f" {' '.join(words)} ", doc_id)
                    names.setdefault((words[0], words[1]), []).append(entry)
        return names

    def _pool(self, doc_ids: Sequence[str] | None) -> list[str]:
        """The catalog's documents, in its order, of `doc_ids` when given."""
        if doc_ids is None:
            return list(self.records)
        wanted = set(doc_ids)
        return [d for d in self.records if d in wanted]

    @cached_property
    def _company(self) -> dict[str, str]:
        """doc_id -> the company its title names ("" for none), read once per catalog: every
        search that names a year or a latest report groups the documents by it."""
        return {doc_id: company_name(r.title) for doc_id, r in self.records.items()}

    @cached_property
    def _companies(self) -> dict[str, list[str]]:
        """`_companies_of` every document, worked out once per catalog."""
        return self._companies_of(None)

    @cached_property
    def _shared_names(self) -> dict[str, dict[str, list[str]]]:
        """Each name (a word of a company's name, its initials) of two companies or more, with
        each company as its first title prints it ("American Airlines (AAL)") and
        its documents."""
        by_name: dict[str, dict[str, list[str]]] = {}
        labels: dict[str, str] = {}
        for doc_id in self.records:
            company = self._company[doc_id]
            if not company:
                continue
            label = labels.setdefault(company, company_label(self.records[doc_id].title))
            for name in names_of(company.split()):
                by_name.setdefault(name, {}).setdefault(label, []).append(doc_id)
        return {name: companies for name, companies in by_name.items() if len(companies) > 1}

    def _companies_of(self, doc_ids: Sequence[str] | None) -> dict[str, list[str]]:
        """Each name that is one company's only, of the companies the titles of `doc_ids` (all
        when None) name, with that company's documents: a word of its name ("boeing"), its
        trading symbol ("jnj"), or its initials ("j j" for J&J, "jnj" for JnJ, "jj")."""
        companies: dict[str, list[str]] = {}
        symbols: dict[str, set[str]] = {}
        wanted = None if doc_ids is None else set(doc_ids)
        for doc_id, record in self.records.items():
            if wanted is None or doc_id in wanted:
                company = self._company[doc_id]
                companies.setdefault(company, []).append(doc_id)
                symbols.setdefault(company, set()).update(symbols_of(record.title))
        companies.pop("", None)
        by_name: dict[str, set[str]] = {}
        for company in companies:
            for name in names_of(company.split()) | symbols.get(company, set()):
                by_name.setdefault(name, set()).add(company)
        return {
            name: companies[next(iter(names))] for name, names in by_name.items() if len(names) == 1
        }

    def latest(self, query: str, doc_ids: Sequence[str] | None = None) -> list[str]:
        """For a question about "the most recent 10-Q" (or latest annual report, last quarter,
        the prior year): of each company's documents (of `doc_ids`, when given), only its
        report of that kind whose title names the latest date; the documents of no company, or
        of a company with no such report, beside them. None when the question asks for no most
        recent report, or names a year or a quarter: "the prior year" of "2022 compared with
        the prior year" is 2021, not the year before the newest report (`dated` reads it)."""
        kind = recent_form(query)
        if kind is None or years(query) or quarters_asked(query):
            return []
        pool = self._pool(doc_ids)
        newest: dict[str, tuple[tuple[int, int, int], str]] = {}
        for doc_id in pool:
            title = self.records[doc_id].title
            company, end = self._company[doc_id], period_end(title)
            if (
                company
                and end
                and is_form(title, kind)
                and (company not in newest or end > newest[company][0])
            ):
                newest[company] = (end, doc_id)
        passed_over = {
            d for d in pool if (company := self._company[d]) in newest and newest[company][1] != d
        }
        return [d for d in pool if d not in passed_over] if passed_over else []

    def matching(
        self,
        *,
        company: str | None = None,
        year: str | None = None,
        form: str | None = None,
        quarter: str | None = None,
        collection: str | None = None,
        doc_ids: Sequence[str] | None = None,
    ) -> list[str] | None:
        """The documents (of `doc_ids`, when given) of `company` (its name, a word of it, its
        trading symbol or initials: "Johnson & Johnson", "JNJ", "J&J"), about `year` ("2022",
        "FY2022": `title_years`), of `form` ("10-K") and reporting on `quarter` ("Q2 FY2024",
        in the company's fiscal calendar: `quarter_named`), as their titles say, and in
        `collection`; `doc_ids` as given when no filter is set."""
        if not (company or year or form or quarter or collection):
            return None if doc_ids is None else list(doc_ids)
        pool = self._pool(doc_ids)
        if company:
            wanted = folded(company)
            aliases = self._companies
            pool = [
                d
                for d in pool
                if (name := self._company[d])
                and (name == wanted or d in aliases.get(wanted, ()) or f" {wanted} " in f" {name} ")
            ]
        if year:
            asked = years(year) or {year}
            pool = [d for d in pool if asked & title_years(self.records[d].title)]
        if form:
            # A filter names the form alone: "10-K", "8-K", "earnings release" or "release".
            forms = forms_asked(form) or {
                RELEASE if folded(form) in (RELEASE, "earnings") else form.strip().upper()
            }
            pool = [d for d in pool if form_of(self.records[d].title) in forms]
        if quarter:
            quarters = quarters_asked(quarter)
            pool = [d for d in pool if self._quarter(d) in quarters]
        if collection:
            pool = [d for d in pool if collection in self.records[d].collections]
        return pool

    def quarter_named(self, doc_id: str) -> str:
        """The fiscal quarter a quarterly report or release reports on, as "Q2 FY2024" (in its
        company's fiscal calendar, as its annual report's title gives it); "" for any other."""
        found = self._quarter(doc_id)
        return "" if found is None else f"Q{found[0]} FY{found[1]}"

    def _quarter(self, doc_id: str) -> tuple[int, int] | None:
        record = self.records.get(doc_id)
        if record is None:
            return None
        return quarter_of(record.title, self._year_ends.get(self._company[doc_id]))

    def versions(self, doc_ids: Sequence[str] | None = None) -> Mapping[str, str]:
        """doc_id -> the indexed version, of every document or only of `doc_ids`. Every
        document's is one mapping per catalog, so that an index can tell it has seen it."""
        if doc_ids is None:
            return self._versions
        return {d: self.records[d].version for d in dict.fromkeys(doc_ids) if d in self.records}

    @cached_property
    def _versions(self) -> Mapping[str, str]:
        return MappingProxyType({doc_id: r.version for doc_id, r in self.records.items()})


def _listed(names: Sequence[str]) -> str:
    """ "A or B", "A, B or C"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
