"""What the chat side reads: hybrid search and reranking, the documents, pages of a document."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, zip_longest

from docchat.errors import DocchatError, ReadOnlyStorageError
from docchat.models import Chunk, DocumentRecord, Page, Passage
from docchat.ports import ChunkStore, DocumentCatalog, Embedder, PageStore, Reranker
from docchat.search.boilerplate import Verdicts, boilerplate, evidence_first
from docchat.search.catalog import Catalog
from docchat.search.concepts import (
    hinted,
    holds_asked,
    statement_asked,
    statements_printing,
    under_statement,
)
from docchat.search.hybrid import Fusion, hybrid_search
from docchat.search.pages import extracted_pages
from docchat.search.quarters import without_quarters
from docchat.search.segments import whole_first
from docchat.search.sentences import row_cells
from docchat.search.terms import asked, terms

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

    def forget(self, doc_id: str) -> None:
        raise ReadOnlyStorageError("a reader's view of the documents is read-only")


@dataclass(frozen=True)
class SearchResult:
    passages: list[Passage]
    reranked: bool
    rerank_note: str = ""  # why the fused order was kept, when reranking was on but failed
    # What the person should know of which documents were searched: a name that several
    # companies share, each of whose documents were searched (`Catalog.ambiguity`).
    scope_note: str = ""
    # What the reranking was billed as (Reranker.search_units; 0 when it was not reranked).
    search_units: int = 0


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
        # Boilerplate verdicts, shared by the libraries `within` makes of this one.
        self._verdicts = Verdicts()

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
        whole ("What is “X” about?"), the answer is where each begins. A company named only by
        a name several share has each one's documents searched, and `scope_note` says so. A
        query that names a form, a most recent report, a quarter or a year searches, of the
        company's documents, those whose titles name it (`Catalog.formed`, `latest`,
        `quartered`, `dated`), when any does; inside the reports of the quarter asked, its
        words are not searched for by keyword (`without_quarters`). Of the passages found,
        those headed by the segment the query names come first and those headed by another
        segment after the rest (`whole_first`); those mostly boilerplate (a certification, a
        cover's check boxes) come after all (`evidence_first`)."""
        catalog = self._catalog(catalog)
        query = asked(query)
        named, rest = catalog.named_in(query, doc_ids)
        note = catalog.ambiguity(query, doc_ids) if named else ""
        if named and not terms(rest) - DOCUMENT_WORDS:
            return SearchResult(
                self._openings(named, top_k, catalog), reranked=False, scope_note=note
            )
        if named:
            query, doc_ids = rest, named
        for narrowed in (catalog.formed, catalog.latest, catalog.quartered, catalog.dated):
            doc_ids = narrowed(query, doc_ids) or doc_ids
        keywords = hinted(query)
        if doc_ids is not None and catalog.of_quarter(query, doc_ids):
            keywords = hinted(without_quarters(query))
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
            keywords=keywords,
        )
        # The index filtered already; an index that let a stale chunk through still must not.
        fused = _statement_first(query, distinct([p for p in fused if _shown(p.chunk, versions)]))
        fused = fused[:pool]
        first = self._evidence_first
        if self.reranker is None or not fused:
            return SearchResult(
                first(query, _printed_first(query, fused)[:top_k], catalog),
                reranked=False,
                rerank_note=self.rerank_off,
                scope_note=note,
            )
        try:
            ranked = self.reranker.rerank(query, fused, top_n=len(fused))
            reranked = _printed_first(query, ranked)[:top_k]
            return SearchResult(
                first(query, reranked, catalog),
                reranked=True,
                scope_note=note,
                search_units=self.reranker.search_units(len(fused)),
            )
        except DocchatError as exc:
            return SearchResult(
                first(query, fused[:top_k], catalog),
                reranked=False,
                rerank_note=str(exc),
                scope_note=note,
            )

    def following(self, chunks: Sequence[Chunk]) -> dict[str, Chunk]:
        """The chunk after each of `chunks` in its document, by the earlier one's id: where a
        sentence cut at a chunk's end goes on (of the same version, so as readable as it)."""
        after = {c.following_id: c for c in chunks if c.following_id}
        found = self.index.chunks(list(after)) if after else {}
        return {
            after[i].chunk_id: chunk
            for i, chunk in found.items()
            if (chunk.doc_id, chunk.version) == (after[i].doc_id, after[i].version)
        }

    def _evidence_first(
        self, query: str, passages: Sequence[Passage], catalog: Catalog
    ) -> list[Passage]:
        """`passages`, those headed by a segment `query` does not name after the rest
        (`whole_first`), and those mostly boilerplate (as `boilerplate` tells it, the rule the
        extractive answer's quotes follow) after all."""
        return evidence_first(
            whole_first(query, passages),
            lambda texts: self.boilerplate(texts, catalog=catalog),
        )

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
        versions = self._catalog(catalog).versions()
        return boilerplate(self.index, versions, sentences, kept=self._verdicts)

    def sentence_similarities(
        self, query: str, chunks: Sequence[Chunk]
    ) -> dict[tuple[str, int], float]:
        """Each sentence's cosine with `query`, when the reranker embeds sentences; none when
        it does not, or when embedding fails (the quotes then rest on the question's words)."""
        if self.reranker is None or not chunks:
            return {}
        try:
            return self.reranker.similarities(query, chunks)
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
    scored as the best; when it names none, those under a statement that prints what it asks
    about and holding it (`_printing`); the rest as they were."""
    if not passages:
        return passages
    names = statement_asked(query)
    if names:
        under = [p for p in passages if under_statement(headed(p.chunk), names)]
    else:
        printing = statements_printing(query)
        under = [p for p in passages if _printing(query, printing, p)]
    if not under:
        return passages
    best = passages[0].score
    first = [p.model_copy(update={"score": best}) for p in under]
    return first + [p for p in passages if all(p is not u for u in under)]


def _printed_first(query: str, passages: list[Passage]) -> list[Passage]:
    """`passages` with the best of those `_printing` what `query` asks about (a measure, no
    statement named: "an improving gross margin profile") first, its score kept (as
    `evidence_first` keeps those it moves): policies and audit matters speak of margins in the
    measure's own words, the statement prints the rows it is computed from."""
    names = statements_printing(query)
    found = next((i for i, p in enumerate(passages) if _printing(query, names, p)), 0)
    if not found:
        return passages
    return [passages[found], *passages[:found], *passages[found + 1 :]]


def _printing(query: str, names: tuple[tuple[str, ...], ...], passage: Passage) -> bool:
    """Whether `passage` is under one of the statements `names` and holds what `query` asks."""
    return (
        bool(names)
        and under_statement(headed(passage.chunk), names)
        and holds_asked(query, passage.chunk.text)
    )


def headed(chunk: Chunk) -> str:
    """What heads `chunk`: its heading path, and the rows its table opens with that hold a
    label alone ("| Condensed Consolidated Balance Sheets |  |  |"). A page whose statement
    sits under a running link ("Table of Contents", as EDGAR's printed filings carry one) is
    converted as one table from the link down, the statement's title a row of it."""
    captions = [*chunk.headings]
    for line in chunk.text.lstrip().splitlines():
        if not line.startswith("|"):
            break
        cells = row_cells(line)
        if all(not c.strip("-: ") for c in cells):
            continue  # the delimiter row
        filled = [c for c in cells if c]
        if len(filled) > 1:
            break
        if cells[0]:
            captions.append(cells[0])
    return " ".join(captions)


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
