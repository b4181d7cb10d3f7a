"""docchat.sources.store: sources.json as earlier docchat wrote it still loads; a source's kind
picks its model; a Graph source keeps the NAME of its secret's variable, never a secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from docchat.sources.store import (
    GraphSource,
    SourceEntry,
    SourcesFile,
    WebSource,
    load_sources,
    save_sources,
)

#: A web source as docchat wrote sources.json before sources had other kinds (4640b72).
WEB_ENTRY = {
    "source": {
        "kind": "web",
        "name": "harbour",
        "url": "http://127.0.0.1:8000/",
        "depth": 1,
        "max_pages": 100,
        "rate": 0.0,
        "collection": "docks",
    },
    "pages": {
        "http://127.0.0.1:8000/": {
            "url": "http://127.0.0.1:8000/",
            "doc_id": "d0c1d",
            "etag": '"abc"',
            "last_modified": "",
            "links": ["http://127.0.0.1:8000/guide.html"],
        }
    },
    "last_sync": {
        "at": "2026-12-01T10:00:00Z",
        "fetched": 1,
        "unchanged": 0,
        "removed": 0,
        "failed": 0,
        "skipped": 0,
        "last_failure": "",
        "skip_note": "",
    },
}


def test_load_sources_reads_a_web_source_written_before_kinds(tmp_path: Path) -> None:
    untyped = {**WEB_ENTRY, "source": {k: v for k, v in WEB_ENTRY["source"].items() if k != "kind"}}
    (tmp_path / "sources.json").write_text(
        json.dumps({"sources": {"harbour": WEB_ENTRY, "untyped": untyped}}), encoding="utf-8"
    )

    sources = load_sources(tmp_path)

    for name in ("harbour", "untyped"):
        entry = sources.sources[name]
        assert isinstance(entry.source, WebSource)
        assert entry.source.where == "http://127.0.0.1:8000/"
        assert entry.cursor == ""
        assert entry.pages["http://127.0.0.1:8000/"].item_id == ""
        assert entry.pages["http://127.0.0.1:8000/"].etag == '"abc"'


def test_a_graph_source_round_trips_by_its_kind(tmp_path: Path) -> None:
    source = GraphSource(
        name="team",
        tenant="contoso.onmicrosoft.com",
        client_id="c1",
        secret_env="TEAM_SECRET",
        drive="b!abc",
    )
    save_sources(tmp_path, SourcesFile(sources={"team": SourceEntry(source=source)}))

    loaded = load_sources(tmp_path).sources["team"].source

    assert loaded == source
    assert loaded.where == "https://graph.microsoft.com/v1.0/drives/b!abc"


@pytest.mark.parametrize(
    "where", [{}, {"drive": "b!abc", "site": "https://contoso.sharepoint.com/sites/team"}]
)
def test_a_graph_source_is_a_drive_or_a_site(where: dict[str, str]) -> None:
    with pytest.raises(ValidationError, match="give either a drive id or a site"):
        GraphSource(name="team", tenant="t", client_id="c", secret_env="S", **where)
