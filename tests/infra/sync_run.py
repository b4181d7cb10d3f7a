"""The sync function's run for tests/infra/test_role_coverage.py: every AWS call its code makes."""

from __future__ import annotations

import json

import boto3
import pytest

from tests.cli.website import Page, Site, page, serving
from tests.functions.conftest import (
    ARTIFACTS_BUCKET,
    DOCS_BUCKET,
    REGION,
    FakeContext,
    _load_handler,
)
from tests.infra.iam import Recorder


def synced_sources(monkeypatch: pytest.MonkeyPatch, recorder: Recorder) -> None:
    """The sync function's calls: a web site synced into a collection, then synced again with a
    page gone (its object deleted); a Confluence source whose secret does not exist; a source
    synced into the default collection, then removed (its objects and its state deleted)."""
    monkeypatch.setenv("DOCCHAT_DOCUMENTS_BUCKET", DOCS_BUCKET)
    site = Site(
        pages={
            "/": Page(page("Harbour", "Welcome.", "/guide.html")),
            "/guide.html": Page(page("Guide", "Moor at pontoon seven.")),
        }
    )
    wiki = {"kind": "confluence", "site": "https://site.atlassian.net", "space": "ENG"}
    handler = _load_handler("sync")
    with serving(site):
        with recorder.harness():
            s3 = boto3.client("s3", region_name=REGION)
            web = {"url": site.url("/"), "rate": 0, "collection": "harbour"}
            for name, definition in {
                "handbook": web,
                "retired": {**web, "collection": ""},
                "wiki": {**wiki, "email": "dana@example.com", "secret": "docchat/wiki"},
            }.items():
                body = json.dumps(definition).encode()
                s3.put_object(Bucket=ARTIFACTS_BUCKET, Key=f"sources/{name}.json", Body=body)
        for _ in range(2):
            with recorder.running("sync"):
                ran = handler.handler({}, FakeContext("sync"))
            site.pages.pop("/guide.html", None)
            with recorder.harness():
                s3.delete_object(Bucket=ARTIFACTS_BUCKET, Key="sources/retired.json")
    counts = {s["name"]: (s["fetched"], s["removed"], s["failed"]) for s in ran["sources"]}
    assert counts == {"handbook": (0, 1, 0), "wiki": (0, 0, 1)}, ran
    assert ran["removed_sources"] == [{"name": "retired", "removed": 2, "last_failure": ""}]
