"""Shared by the MCP tests: two small PDFs with known pages, and a library of them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.answer.backend import ChatBackend
from docchat.config import Settings
from docchat.ingest.local import ingest_file
from docchat.ingest.shelf import Shelf
from docchat.ports import ChatModel, Embedder
from docchat.search.library import Library
from docchat.serve.access import UsersFile
from docchat.wiring.local import as_served, guarded_local_app, local_backend, open_local
from tests.chatkit import SEARCH, ServedApp, tuned_config
from tests.conftest import WordEmbedder
from tests.pdfgen import make_pdf

WEB_URL = "http://127.0.0.1:8000/"
FERRIES = make_pdf(
    [
        [("h1", "Ferries"), ("body", "The ferry to the island leaves every hour.")],
        [("h2", "Fares"), ("body", "A return ticket costs twelve euros.")],
    ],
    title="Island ferries",
)
# Seven pages: more than read_pages returns in one call (MAX_READ_PAGES = 5).
BRIDGE_PAGES = [
    ("Stone", "Monks built the stone bridge in 1320."),
    ("Iron", "Iron girders replaced the wooden deck in 1871."),
    ("Chain", "A chain bridge links the two markets."),
    ("Rope", "Rope bridges once crossed the gorge upstream."),
    ("Swing", "The swing bridge opens for tall ships at noon."),
    ("Tower", "Lamps on the towers are lit at dusk."),
    ("Rail", "Forty trains a day cross the rail bridge."),
]
BRIDGES = make_pdf(
    [[("h1", heading), ("body", body)] for heading, body in BRIDGE_PAGES], title="City bridges"
)


def write_pdfs(folder: Path) -> list[Path]:
    """ferries.pdf and bridges.pdf in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "ferries.pdf", folder / "bridges.pdf"]
    for path, data in zip(paths, (FERRIES, BRIDGES), strict=True):
        path.write_bytes(data)
    return paths


def ingested(
    data_dir: Path, embedder: Embedder, *, own_collections: bool = False
) -> dict[str, str]:
    """The two PDFs indexed into `data_dir` with `embedder`; doc ids by file stem. With
    `own_collections`, each file goes into the collection named by its stem (`ferries`,
    `bridges`)."""
    settings = Settings(data_dir=data_dir)
    index = SqliteIndex(
        settings.index_path, embedding_model=embedder.model_id, dimension=embedder.dimension
    )
    try:
        ids = {}
        for path in write_pdfs(data_dir.parent / "pdfs"):
            collections = [path.stem] if own_collections else []
            result = ingest_file(
                path,
                shelf=Shelf(index, index, index),
                embedder=embedder,
                settings=settings,
                collections=collections,
            )
            assert result.outcome == "indexed", result.record.error
            if own_collections:
                assert result.record.collections == collections
            ids[path.stem] = result.record.doc_id
        return ids
    finally:
        index.close()


def backend_of(data_dir: Path, embedder: Embedder, model: ChatModel | None = None) -> ChatBackend:
    """The chat backend over `data_dir` as `docchat serve` wires it, with `embedder`."""
    index = SqliteIndex(
        Settings(data_dir=data_dir).index_path,
        embedding_model=embedder.model_id,
        dimension=embedder.dimension,
    )
    library = Library(index=index, embedder=embedder, registry=index, page_store=index, **SEARCH)
    return ChatBackend(library=library, model=model, config=tuned_config())


@contextmanager
def served_as_docchat_serve(data_dir: Path, users: UsersFile | None = None) -> Iterator[str]:
    """The app `docchat serve` runs over `data_dir` (its catalog listing what `docchat ingest`
    is working on: `as_served`), by uvicorn on 127.0.0.1; its base URL, with no trailing slash."""
    settings = Settings(data_dir=data_dir)
    local = as_served(settings, open_local(settings, WordEmbedder()))
    backend = local_backend(settings, local)
    served = ServedApp(guarded_local_app(settings, lambda: backend, users=users))
    served.start()
    try:
        yield f"http://127.0.0.1:{served.port}"
    finally:
        served.stop()
        local.close()
