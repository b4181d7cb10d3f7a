"""docchat.sources.crawl's pure parts: which URLs are synced, what links a page holds, and the
file name a response is read as."""

from __future__ import annotations

import pytest

from docchat.errors import SourceError
from docchat.sources.crawl import checked_url, links_in, name_for, same_site


def test_checked_url_drops_the_fragment() -> None:
    assert checked_url(" https://docs.example.org/guide#intro ") == "https://docs.example.org/guide"


@pytest.mark.parametrize(
    "url", ["ftp://example.org/", "example.org", "file:///etc/passwd", "http://"]
)
def test_checked_url_refuses_what_is_not_http(url: str) -> None:
    with pytest.raises(SourceError, match="give an http:// or https:// URL"):
        checked_url(url)


def test_links_in_resolves_against_base_and_lists_each_once() -> None:
    html = (
        b'<html><head><base href="/docs/"></head><body><a href="a.html#top">a</a>'
        b'<a href="a.html">again</a><a href="mailto:x@example.org">mail</a>'
        b'<a href="https://other.example/b.pdf">off site</a><a href="../c">c</a></body></html>'
    )

    links = links_in(html, "https://example.org/index.html")

    assert links == (
        "https://example.org/docs/a.html",
        "https://other.example/b.pdf",
        "https://example.org/c",
    )


def test_same_site_compares_scheme_host_and_port() -> None:
    assert same_site("https://Example.org/a", "https://example.org/")
    assert not same_site("http://example.org/a", "https://example.org/")
    assert not same_site("https://example.org:8443/a", "https://example.org/")


@pytest.mark.parametrize(
    ("url", "media_type", "name"),
    [
        ("https://x.org/", "text/html", "index.html"),
        ("https://x.org/guide", "text/html", "guide.html"),
        ("https://x.org/page.php", "text/html", "page.html"),
        ("https://x.org/a.htm", "text/html", "a.htm"),
        ("https://x.org/r.pdf", "application/octet-stream", "r.pdf"),
        ("https://x.org/download", "application/pdf", "download.pdf"),
        ("https://x.org/notes.txt", "text/plain", "notes.txt"),
        ("https://x.org/logo.png", "image/png", None),
        # as the link spells it, without its query
        (
            "https://x.org/rapport%20%C3%A9t%C3%A9%20%231.pdf",
            "application/pdf",
            "rapport été #1.pdf",
        ),
        ("https://x.org/get.php?id=3&v=2", "application/pdf", "get.pdf"),
        ("https://x.org/a%2Fb.pdf", "application/pdf", "a_b.pdf"),
    ],
)
def test_name_for_reads_a_response_by_its_type_or_its_name(
    url: str, media_type: str, name: str | None
) -> None:
    assert name_for(url, media_type) == name
