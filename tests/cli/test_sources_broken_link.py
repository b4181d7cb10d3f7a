"""A site's broken link (a page it links to that answers 404 and was never synced) is the
site's to mend: `docchat sync` skips it, names it, and exits 0, keeping what it synced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.run import run
from tests.cli.website import Page, Site, page, serving


def test_a_broken_link_is_skipped_and_the_sync_succeeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    site = Site()
    site.pages["/"] = Page(page("Home", "Harbour index.", "/guide.html", "/missing.html"))
    site.pages["/guide.html"] = Page(page("Guide", "The harbour opens at dawn."))
    with serving(site):
        add = ["sources", "add", "web", site.url("/"), "--rate", "0", "--name", "h"]
        assert run(capsys, *add, "--data-dir", data)[0] == 0

        code, out, err = run(capsys, "sync", "--data-dir", data)

        assert code == 0, out + err
        assert f"{site.url('/missing.html')}: skipped: 404" in out + err
        code, out, err = run(capsys, "status", "--json", "--data-dir", data)
        assert code == 0, err
        sources = {d["source"] for d in json.loads(out)["documents"]}
        assert sources == {site.url("/"), site.url("/guide.html")}
