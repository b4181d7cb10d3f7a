"""What the chat side reads: hybrid search and reranking, the documents, pages of a document."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, pairwise, zip_longest
from pathlib import PurePosixPath
from types import MappingProxyType

from docchat.errors import DocchatError, ReadOnlyStorageError
from docchat.models import Chunk, DocStatus, DocumentRecord, Page, Passage
from docchat.ports import ChunkStore, DocumentCatalog, Embedder, PageStore, Reranker
from docchat.search.boilerplate import boilerplate
from docchat.search.concepts import hinted, statement_asked, under_statement
from docchat.search.hybrid import Fusion, hybrid_search
from docchat.search.pages import extracted_pages
from docchat.search.rerank import sentence_similarities
from docchat.search.terms import asked, terms, years
from docchat.search.titles import (
    capitalized,
    company_name,
    folded,
    is_form,
    names_of,
    period_end,
    recent_form,
    symbols_of,
    title_years,
)

# Passages the reranker sees per passage wanted (the evaluation reranks as many).
RERANK_POOL = 4
# Words asking about a whole document rather than something in it: "What is “X” about?",
# "What are the key points of “X”?", "How do “X” and “Y” differ?".
DOCUMENT_WORDS = frozenset(
    terms("about overview summary summarize summarise key main points topics purpose differ")
)


@dataclass(frozen=True)
class Visible:
    """Which documents a reader sees: those in any of `collections` (None: every collection)
    and, of them, `doc_ids` (None: all). A Library restricted to it (`Library.within`) reads
    nothing else: not in listings, searches (the allowed versions go into the index query),
    pages or files."""

    collections: frozenset[str] | None = None
    doc_ids: frozenset[str] | None = None

    def admits(self, record: DocumentRecord) -> bool:
        """Whether the reader sees `record`."""
        if self.doc_ids is not None and record.doc_id not in self.doc_ids:
            return False
        return self.collections is None or not self.collections.isdisjoint(record.collections)


class VisibleRegistry:
    """A catalog as a reader sees it: what `visible` does not admit does not exist, and
    nothing is written through it."""

    def __init__(self, registry: DocumentCatalog, visible: Visible) -> None:
        self.inner = registry
        self.visible = visible

    read_only = True

    def documents(self) -> list[DocumentRecord]:
        return [r for r in self.inner.documents() if self.visible.admits(r)]

    def document(self, doc_id: str) -> DocumentRecord | None:
        record = self.inner.document(doc_id)
        return record if record is not None and self.visible.admits(record) else None

    def unfinished(self) -> list[DocumentRecord]:
        return [r for r in self.inner.unfinished() if self.visible.admits(r)]

    def indexed_version(self, version: str) -> DocumentRecord | None:
        record = self.inner.indexed_version(version)
        return record if record is not None and self.visible.admits(record) else None

    def revision(self) -> int | None:
        return self.inner.revision()

    def set_record(self, record: DocumentRecord) -> None:
        raise ReadOnlyStorageError("a reader's view of the documents is read-only")


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

    def named_in(self, query: str, doc_ids: Sequence[str] | None = None) -> tuple[list[str], str]:
        """The documents (of `doc_ids`, when given) whose title or file name `query` spells
        out, or whose company it names, in the order it names them, and the query without
        those names. A title or file name must be two words or more ("2007 Instruction
        1040-NR", "dmca.pdf"): one word is too often just a word. One word names a company
        when it is written with a capital and, of the companies the titles name ("Amazon.com,
        Inc. Form 10-K 2019"), is in one company's name only ("Amazon").

        Names are tried in the catalog's order, each on what earlier matches left of the
        query; only those whose first two words the query still holds are tried at all."""
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
        return [doc_id for _, doc_id in sorted(found)], rest.strip()

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
        by_company: dict[str, list[str]] = {}
        for doc_id in pool:
            by_company.setdefault(self._company[doc_id], []).append(doc_id)
        passed_over: set[str] = set()
        for company, documents in by_company.items():
            named = {d: title_years(self.records[d].title) for d in documents}
            if company and any(asked & found for found in named.values()):
                passed_over.update(d for d, found in named.items() if found and not asked & found)
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
        """For a question about "the most recent 10-Q" (or latest annual report, last quarter):
        of each company's documents (of `doc_ids`, when given), only its report of that kind
        whose title names the latest date; the documents of no company, or of a company with no
        such report, beside them. None when the question asks for no most recent report."""
        kind = recent_form(query)
        if kind is None:
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
        doc_ids: Sequence[str] | None = None,
    ) -> list[str] | None:
        """The documents (of `doc_ids`, when given) of `company` (its name, a word of it, its
        trading symbol or initials: "Johnson & Johnson", "JNJ", "J&J"), about `year` ("2022",
        "FY2022": `title_years`) and of `form` ("10-K"), as their titles say; `doc_ids` as
        given when no filter is set."""
        if not (company or year or form):
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
            wanted_form = f" form {folded(form)} "
            pool = [d for d in pool if wanted_form in f" {folded(self.records[d].title)} "]
        return pool

    def versions(self, doc_ids: Sequence[str] | None = None) -> Mapping[str, str]:
        """doc_id -> the indexed version, of every document or only of `doc_ids`. Every
        document's is one mapping per catalog, so that an index can tell it has seen it."""
        if doc_ids is None:
            return self._versions
        return {d: self.records[d].version for d in dict.fromkeys(doc_ids) if d in self.records}

    @cached_property
    def _versions(self) -> Mapping[str, str]:
        return MappingProxyType({doc_id: r.version for doc_id, r in self.records.items()})


@dataclass(frozen=True)
class SearchResult:
    passages: list[Passage]
    reranked: bool
    rerank_note: str = ""  # why the fused order was kept, when reranking was on but failed


class Library:
    """The indexed documents as the agent and the API see them; `candidates`, `fusion` and
    `vector_weight` are `hybrid_search`'s (callers pass the settings' values)."""

    def __init__(
        self,
        *,
        index: ChunkStore,
        embedder: Embedder,
        registry: DocumentCatalog,
        reranker: Reranker | None = None,
        candidates: int,
        fusion: Fusion,
        vector_weight: float,
        page_store: PageStore | None = None,
        rerank_off: str = "",
    ) -> None:
        self.index = index
        # Why the reranker asked for is off (docchat.wiring.rerank_off), told with each search.
        self.rerank_off = rerank_off
        self.page_store = page_store
        self.embedder = embedder
        self.registry = registry
        self.reranker = reranker
        self.candidates = candidates
        self.fusion: Fusion = fusion
        self.vector_weight = vector_weight
        # A catalog that tells when it changed is read again only then (see `catalog`).
        self._revision = registry.revision
        self._kept: tuple[int, Catalog] | None = None

    def within(self, visible: Visible) -> Library:
        """This library as a reader who sees only `visible` finds it (the registry it reads is
        restricted first, so every search, listing and page read stays inside)."""
        scoped = copy.copy(self)
        scoped.registry = VisibleRegistry(self.registry, visible)
        # Not the catalog this library kept: it lists what the reader may not see.
        scoped._revision = scoped.registry.revision
        scoped._kept = None
        return scoped

    def catalog(self) -> Catalog:
        """The documents a chat may read now: kept while the registry says it is unchanged,
        else read again (reuse it within an answer)."""
        revision = self._revision()
        if revision is None:
            return Catalog.of(self.registry.documents())
        kept = self._kept
        if kept is None or kept[0] != revision:
            kept = self._kept = (revision, Catalog.of(self.registry.documents()))
        return kept[1]

    def search(
        self,
        query: str,
        *,
        top_k: int,
        doc_ids: Sequence[str] | None = None,
        catalog: Catalog | None = None,
    ) -> SearchResult:
        """Hybrid candidates of indexed versions only, reranked when a reranker is set; the
        fused order if reranking fails. Without `catalog`, the registry is read first.

        A query that names documents by title or file name, or their company, searches those
        documents for the rest of it; when nothing is left but words about the documents as a
        whole ("What is “X” about?"), the answer is where each begins. A query that names a
        year searches the documents whose title names that year (`Catalog.dated`), when any
        does."""
        catalog = self._catalog(catalog)
        query = asked(query)
        named, rest = catalog.named_in(query, doc_ids)
        if named and not terms(rest) - DOCUMENT_WORDS:
            return SearchResult(self._openings(named, top_k, catalog), reranked=False)
        if named:
            query, doc_ids = rest, named
        doc_ids = catalog.latest(query, doc_ids) or catalog.dated(query, doc_ids) or doc_ids
        versions = catalog.versions(doc_ids)
        pool = top_k * RERANK_POOL if self.reranker else top_k
        # Twice as many, so that collapsing duplicates still leaves `pool` distinct passages.
        fused = hybrid_search(
            self.index,
            self.embedder,
            query,
            top_k=pool * 2,
            candidates=self.candidates,
            versions=versions,
            fusion=self.fusion,
            vector_weight=self.vector_weight,
            keywords=hinted(query),
        )
        # The index filtered already; an index that let a stale chunk through still must not.
        fused = _statement_first(query, distinct([p for p in fused if _shown(p.chunk, versions)]))
        fused = fused[:pool]
        if self.reranker is None or not fused:
            return SearchResult(fused[:top_k], reranked=False, rerank_note=self.rerank_off)
        try:
            return SearchResult(self.reranker.rerank(query, fused, top_n=top_k), reranked=True)
        except DocchatError as exc:
            return SearchResult(fused[:top_k], reranked=False, rerank_note=str(exc))

    def _openings(self, doc_ids: Sequence[str], top_k: int, catalog: Catalog) -> list[Passage]:
        """The first chunks of each document, taken in turn."""
        versions = catalog.versions(doc_ids)
        heads = [
            [c for c in self.index.document_chunks(d, version=v) if _shown(c, versions)][:top_k]
            for d, v in versions.items()
        ]
        firsts = [c for c in chain.from_iterable(zip_longest(*heads)) if c is not None][:top_k]
        return [Passage(chunk=c, score=1.0 - n / len(firsts)) for n, c in enumerate(firsts)]

    def boilerplate(self, sentences: Sequence[str], *, catalog: Catalog | None = None) -> set[str]:
        """Those of `sentences` that many of the documents a chat may read hold nearly
        verbatim, and a form's rows of check boxes (`docchat.search.boilerplate`)."""
        return boilerplate(self.index, self._catalog(catalog).versions(), sentences)

    def sentence_similarities(
        self, query: str, chunks: Sequence[Chunk]
    ) -> dict[tuple[str, int], float]:
        """Each sentence's cosine with `query`, when the reranker embeds sentences; none when
        it does not, or when embedding fails (the quotes then rest on the question's words)."""
        try:
            return sentence_similarities(self.reranker, query, chunks)
        except DocchatError:
            return {}

    def _catalog(self, given: Catalog | None) -> Catalog:
        return given if given is not None else self.catalog()

    def documents(self) -> list[DocumentRecord]:
        return self.registry.documents()

    def document(self, doc_id: str) -> DocumentRecord | None:
        return self.registry.document(doc_id)

    def extracted_pages(
        self, doc_id: str, *, first: int | None = None, last: int | None = None
    ) -> list[Page]:
        """Pages first..last of the document's current version as conversion extracted them."""
        record = self.registry.document(doc_id)
        return extracted_pages(record, self.page_store, doc_ref=doc_id, first=first, last=last)

    def pages(
        self, doc_id: str, first: int, last: int, *, catalog: Catalog | None = None
    ) -> list[Chunk]:
        """Chunks of the indexed version of a document that overlap pages first..last, in
        reading order; none when the document is not indexed."""
        versions = self._catalog(catalog).versions([doc_id])
        if doc_id not in versions:
            return []
        return [
            c
            for c in self.index.document_chunks(doc_id, version=versions[doc_id])
            if _shown(c, versions) and c.page_end >= first and c.page_start <= last
        ]


def _statement_first(query: str, passages: list[Passage]) -> list[Passage]:
    """`passages`, those under the heading of the financial statement `query` says to read
    ("... shown in the cash flow statement": "Consolidated Statement of Cash Flows") first,
    scored as the best; the rest as they were."""
    names = statement_asked(query)
    if not names or not passages:
        return passages
    under = [p for p in passages if under_statement(" ".join(p.chunk.headings), names)]
    if not under:
        return passages
    best = passages[0].score
    first = [p.model_copy(update={"score": best}) for p in under]
    return first + [p for p in passages if all(p is not u for u in under)]


def distinct(passages: Sequence[Passage]) -> list[Passage]:
    """`passages` without repeats: a passage whose text (whitespace and case aside) an
    earlier one has, in this or another document, is the earlier one's result."""
    seen: set[str] = set()
    kept: list[Passage] = []
    for passage in passages:
        key = " ".join(passage.chunk.text.casefold().split())
        if key not in seen:
            seen.add(key)
            kept.append(passage)
    return kept


def _shown(chunk: Chunk, versions: Mapping[str, str]) -> bool:
    return versions.get(chunk.doc_id) == chunk.version
