"""Crawling one web source: from its start page (or its sitemap's pages), same-site links to the
source's depth and page count, as robots.txt allows, one request at a time at the source's rate.
Each page or file requested is one outcome; what becomes of it (ingested, removed) is sync.py's.
"""

from __future__ import annotations

import time
import urllib.robotparser
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit
from xml.etree import ElementTree

import requests
from requests.utils import requote_uri
from selectolax.lexbor import LexborHTMLParser

from docchat.errors import SourceError
from docchat.ingest.formats import FORMATS, is_readable, suffix_of
from docchat.ingest.uploads import MAX_UPLOAD_BYTES
from docchat.models import file_name
from docchat.sources.store import PageState, WebSource

AGENT = "docchat"
TIMEOUT = (10.0, 60.0)  # connect, read (seconds)
MAX_SITEMAPS = 50
_HTML_TYPES = {"text/html", "application/xhtml+xml"}
#: Page suffixes of server-side pages, which serve HTML though docchat does not read the suffix.
_PAGE_SUFFIXES = {".php", ".asp", ".aspx", ".jsp", ".cgi", ".shtml"}
_BY_MEDIA_TYPE = {fmt.media_type: suffix for suffix, fmt in reversed(FORMATS.items())}


@dataclass(frozen=True)
class Fetched:
    """A page or file answered 200: its bytes, the file name they are read as, its validators
    and the same-site links it holds (an HTML page's; none for a file); a drive's file also
    its item id."""

    url: str
    data: bytes
    name: str
    etag: str = ""
    last_modified: str = ""
    links: tuple[str, ...] = ()
    item_id: str = ""


@dataclass(frozen=True)
class NotModified:
    url: str


@dataclass(frozen=True)
class Gone:
    url: str
    status: int


@dataclass(frozen=True)
class Deleted:
    """A document the source says it deleted (a drive's item with the `deleted` facet)."""

    url: str
    why: str


@dataclass(frozen=True)
class Failed:
    url: str
    reason: str


@dataclass(frozen=True)
class Disallowed:
    url: str
    reason: str


Outcome = Fetched | NotModified | Gone | Deleted | Failed | Disallowed


def checked_url(url: str) -> str:
    """`url` when it is an http(s) URL with a host (without its fragment, its host in lower
    case, "/" for no path), or SourceError saying what to give."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SourceError(
            f"{url!r} is not a web address docchat can sync: give an http:// or https:// URL "
            "(a page, or a sitemap.xml)"
        )
    # One spelling of each start page: "HTTP://Example.org" is "http://example.org/".
    netloc = parts.netloc if "@" in parts.netloc else parts.netloc.lower()
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def same_site(url: str, start: str) -> bool:
    """Whether `url` is on `start`'s site: the same scheme, host and port."""
    a, b = urlsplit(url), urlsplit(start)
    return (a.scheme, a.netloc.lower()) == (b.scheme, b.netloc.lower())


def links_in(html: bytes, base: str) -> tuple[str, ...]:
    """The links an HTML page holds, absolute, without fragments, in order, each once."""
    tree = LexborHTMLParser(html)
    found = tree.css_first("base[href]")
    if found is not None:
        base = urljoin(base, found.attributes.get("href") or "")
    links: dict[str, None] = {}
    for anchor in tree.css("a[href]"):
        href = (anchor.attributes.get("href") or "").strip()
        if href and not href.startswith(("mailto:", "javascript:", "tel:")):
            # One spelling of each: "Übersicht.html" is "%C3%9Cbersicht.html", as requested.
            links[requote_uri(urldefrag(urljoin(base, href)).url)] = None
    return tuple(links)


def _followable(url: str) -> bool:
    """Whether a link may be a page or a file docchat reads (by its path's suffix)."""
    base = PurePosixPath(urlsplit(url).path).name
    suffix = suffix_of(base)
    return not suffix or is_readable(base) or suffix in _PAGE_SUFFIXES


def _is_file(url: str) -> bool:
    """Whether a link is to a file docchat reads other than a page (a PDF, a .docx, ...), which
    holds no links to follow."""
    base = PurePosixPath(urlsplit(url).path).name
    return is_readable(base) and FORMATS[suffix_of(base)] != FORMATS[".html"]


def name_for(url: str, media_type: str) -> str | None:
    """The file name a response is read as (its format by extension), as its link spells it
    ("rapport été.pdf", not "rapport%20..."), or None for a type docchat does not read."""
    base = file_name(url).replace("/", "_") or "index"
    stem = base.rpartition(".")[0] if "." in base else base
    if media_type in _HTML_TYPES:
        return base if FORMATS.get(suffix_of(base)) == FORMATS[".html"] else f"{stem}.html"
    suffix = _BY_MEDIA_TYPE.get(media_type)
    if suffix is not None:
        return base if FORMATS.get(suffix_of(base)) == FORMATS[suffix] else f"{stem}{suffix}"
    return base if is_readable(base) else None


@dataclass
class Crawler:
    """One crawl of `source`, given what the last sync knew of each page (`known`)."""

    source: WebSource
    known: Mapping[str, PageState]
    session: requests.Session = field(default_factory=requests.Session)
    sleep: Callable[[float], None] = time.sleep
    #: False once something failed that may have linked to pages the crawl then missed: the
    #: pages not reached are then not taken as gone from the site.
    complete: bool = True
    #: Where the next sync starts: nowhere, as a crawl starts over each time.
    cursor: str = ""
    _last_request: float | None = None

    def outcomes(self) -> Iterator[Outcome]:
        """Each page or file requested (or refused by robots.txt), in crawl order."""
        start = checked_url(self.source.url)
        robots = self._robots(start)
        if isinstance(robots, Failed):
            self.complete = False
            yield robots
            return
        if not robots.can_fetch(AGENT, start):  # nothing can be synced: not a site gone empty
            self.complete = False
            path = urlsplit(start).path or "/"
            yield Failed(start, f"{start}: robots.txt disallows {path} to docchat: start elsewhere")
            return
        queue: deque[tuple[str, int]] = deque()
        if urlsplit(start).path.endswith(".xml"):
            queue.extend((url, 0) for url in self._sitemap(start, robots, set()))
        else:
            queue.append((start, 0))
        seen = {url for url, _ in queue}
        yielded: set[str] = set()
        requested = 0
        while queue and requested < self.source.max_pages:
            url, depth = queue.popleft()
            if not robots.can_fetch(AGENT, url):
                yield Disallowed(url, f"robots.txt disallows {urlsplit(url).path or '/'}")
                continue
            outcome = self._fetch(url)
            requested += 1
            if isinstance(outcome, Gone) and url == start:
                # Not a site gone empty: a mistyped or moved start URL keeps what was synced.
                said = f"{url}: {outcome.status}, the start page is not there: check the URL"
                outcome = Failed(url, said)
            if outcome.url in yielded:  # a redirect to a page the crawl has already read
                continue
            seen.add(outcome.url)
            yielded.add(outcome.url)
            yield outcome
            for link in self._links_of(outcome):
                # The last depth's pages are read, and the files they link to with them.
                further = depth < self.source.depth or _is_file(link)
                if further and link not in seen and same_site(link, start) and _followable(link):
                    seen.add(link)
                    queue.append((link, depth + 1))

    def _links_of(self, outcome: Outcome) -> tuple[str, ...]:
        if isinstance(outcome, Fetched):
            return outcome.links
        known = self.known.get(outcome.url)
        if isinstance(outcome, NotModified | Failed) and known is not None:
            return tuple(known.links)  # as they were: what it linked to is kept, not lost
        if isinstance(outcome, Failed):
            self.complete = False
        return ()

    @contextmanager
    def _get(
        self, url: str, headers: Mapping[str, str] | None = None
    ) -> Iterator[requests.Response]:
        """One GET, `rate` seconds after the previous one ended (its body read): the server
        sees at least that long between any two requests, however long each takes."""
        if self._last_request is not None:
            wait = self.source.rate - (time.monotonic() - self._last_request)
            if wait > 0:
                self.sleep(wait)
        try:
            with self.session.get(
                url,
                headers={"User-Agent": AGENT, **(headers or {})},
                timeout=TIMEOUT,
                stream=True,
                allow_redirects=True,
            ) as response:
                yield response
        finally:
            self._last_request = time.monotonic()

    def _robots(self, start: str) -> urllib.robotparser.RobotFileParser | Failed:
        parts = urlsplit(start)
        url = f"{parts.scheme}://{parts.netloc}/robots.txt"
        robots = urllib.robotparser.RobotFileParser(url)
        try:
            with self._get(url) as response:
                status, text = response.status_code, response.text
        except requests.RequestException as exc:
            return Failed(url, f"{url}: cannot connect ({type(exc).__name__}): check the URL")
        if status >= 500:
            return Failed(url, f"{url}: the server failed ({status}): sync again later")
        if status in (401, 403):  # as urllib.robotparser reads them: nothing may be fetched
            robots.parse(["User-agent: *", "Disallow: /"])
        else:  # another 4xx is no robots.txt: everything may be
            robots.parse(text.splitlines() if status < 400 else [])
        return robots

    def _sitemap(
        self, url: str, robots: urllib.robotparser.RobotFileParser, visited: set[str]
    ) -> list[str]:
        """The pages a sitemap lists (a sitemap index's sitemaps' pages), same-site only."""
        visited.add(url)
        fetched = self._fetch(url, sitemap=True)
        if not isinstance(fetched, Fetched):
            self.complete = False
            return []
        try:
            root = _xml(fetched.data)
        except ElementTree.ParseError:
            self.complete = False
            return []
        locs = [(e.text or "").strip() for e in root.iter() if e.tag.rpartition("}")[2] == "loc"]
        locs = [urldefrag(loc).url for loc in locs if loc and same_site(loc, url)]
        if root.tag.rpartition("}")[2] != "sitemapindex":
            return list(dict.fromkeys(locs))
        pages: list[str] = []
        for nested in locs:
            if nested not in visited and len(visited) < MAX_SITEMAPS:
                pages.extend(self._sitemap(nested, robots, visited))
        return list(dict.fromkeys(pages))

    def _fetch(self, url: str, *, sitemap: bool = False) -> Outcome:
        """What `url` answers: asked conditionally when the last sync kept its validators."""
        known = None if sitemap else self.known.get(url)
        headers = {}
        if known is not None and known.etag:
            headers["If-None-Match"] = known.etag
        if known is not None and known.last_modified:
            headers["If-Modified-Since"] = known.last_modified
        try:
            with self._get(url, headers) as response:
                return self._answered(url, response, sitemap=sitemap)
        except requests.TooManyRedirects:
            return Failed(url, f"{url}: redirects in a loop: fix or remove the link")
        except requests.RequestException as exc:
            failure = f"{url}: the request failed ({type(exc).__name__}): sync again later"
            return Failed(url, failure)

    def _answered(self, url: str, response: requests.Response, *, sitemap: bool) -> Outcome:
        status = response.status_code
        if status == 304:
            return NotModified(url)
        if status in (404, 410):
            return Gone(url, status)
        if status != 200:
            said = f"{url}: {status} {response.reason or ''}".rstrip()
            return Failed(url, said + _advice(status))
        if not same_site(response.url, url):
            return Failed(url, f"{url}: redirects to another site ({response.url}), not followed")
        media_type = response.headers.get("Content-Type", "").partition(";")[0].strip().lower()
        name = "sitemap.xml" if sitemap else name_for(response.url, media_type)
        if name is None:
            served = media_type or "no type"
            return Failed(url, f"{url}: served as {served}, which docchat does not read")
        data = capped_body(response, limit=MAX_UPLOAD_BYTES)
        if data is None:
            limit = size_said(MAX_UPLOAD_BYTES)
            return Failed(url, f"{url}: over the size limit of {limit}, not fetched")
        html = media_type in _HTML_TYPES
        return Fetched(
            url if sitemap else urldefrag(response.url).url,  # where a same-site redirect led
            data,
            name,
            etag=response.headers.get("ETag", ""),
            last_modified=response.headers.get("Last-Modified", ""),
            links=links_in(data, response.url) if html else (),
        )


def _xml(data: bytes) -> ElementTree.Element:
    """A sitemap's root; one with a DTD is refused, so ElementTree expands no entity."""
    if b"<!DOCTYPE" in data[:4096].upper() or b"<!ENTITY" in data.upper():
        raise ElementTree.ParseError("a sitemap with a DTD is not read")
    return ElementTree.fromstring(data)


def capped_body(response: requests.Response, *, limit: int) -> bytes | None:
    """The response's bytes, or None when they are more than `limit` (what an upload may be)."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(chunk_size=64 * 1024):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def size_said(limit: int) -> str:
    """ "100 MB", or a number of bytes that is no whole number of MB."""
    mb, rest = divmod(limit, 1024 * 1024)
    return f"{mb} MB" if mb and not rest else f"{limit} bytes"


def _advice(status: int) -> str:
    """What a person can do about a status."""
    if status in (401, 403):
        return ": the server refuses docchat; remove the page from the site's links or allow it"
    if status == 429:
        return ": the server asks for fewer requests; raise the source's --rate"
    if status >= 500:
        return ": the server failed; sync again later"
    return ""
