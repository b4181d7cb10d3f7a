"""Syncing one Confluence Cloud space (REST API v2): the space's pages, listed whole each sync
page after page (`_links.next`), each with its body in storage format (XHTML) and its version
number, then each page's attachments. Confluence v2 has no delta feed: what changed since the
last sync is what has another version number than the last sync kept, and only that is
fetched; a page or attachment the complete listing no longer holds is gone. Each page or file is
one outcome, as a crawled page is; what becomes of it (ingested, removed) is sync.py's.
The API token is read from the environment when the sync starts and is sent only to the space's
site, as the password of basic auth; no outcome, error or log carries it."""

from __future__ import annotations

import html
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from docchat.ingest.formats import is_readable
from docchat.ingest.uploads import MAX_UPLOAD_BYTES
from docchat.sources.answers import RETRIES, THROTTLED, json_object, wait_asked
from docchat.sources.crawl import (
    TIMEOUT,
    Deleted,
    Failed,
    Fetched,
    NotModified,
    Outcome,
    capped_body,
    size_said,
)
from docchat.sources.store import ConfluenceSource, PageState
from docchat.sources.walk import ServiceWalk, Stopped

#: Results asked for per listing page (the most v2 gives).
LIMIT = 250
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)


def api_root(site: str) -> str:
    """Where a site's REST API is asked: the site itself (a test points it at 127.0.0.1)."""
    return site


@dataclass
class SpacePages(ServiceWalk[ConfluenceSource]):
    """One sync of a Confluence space `source`, given what the last sync knew of each page and
    attachment (`known`). Its `cursor` stays "": Confluence v2 gives no delta token, so each
    sync lists the space whole, and `complete` is True once that listing reached its end."""

    _token: str = ""

    def outcomes(self) -> Iterator[Outcome]:
        """Each page and readable attachment of the space, page by page, each page followed by
        its attachments; a failure that stops the sync is the last outcome."""
        by_item = {p.item_id: p for p in self.known.values() if p.item_id}
        try:
            self._token = self._token_from_environment()
            space = quote(self._space_id(), safe="")
            pages = f"{self._api()}/wiki/api/v2/spaces/{space}/pages"
            url = f"{pages}?body-format=storage&limit={LIMIT}"
            while url:
                listing = self._json(url)
                base = self._web_base(listing)
                for page in _results(listing):
                    yield from self._page(page, base, by_item)
                url = self._next(listing)
            self.complete = True
        except Stopped as stopped:
            self.complete = False
            yield stopped.failed

    def _page(
        self, page: dict[str, Any], base: str, by_item: dict[str, PageState]
    ) -> Iterator[Outcome]:
        """What became of one page, then of its attachments."""
        page_id, title = str(page.get("id", "")), str(page.get("title", ""))
        url = _joined(base, _links(page).get("webui"))
        if not page_id or not url or page.get("status", "current") != "current":
            return
        tag = _version(page)
        known = yield from self._moved(page_id, url, by_item)
        if known is not None and tag and known.etag == tag:
            yield NotModified(url)
        else:
            yield self._page_fetched(page, url=url, title=title or page_id, tag=tag)
        listing_url = f"{self._api()}/wiki/api/v2/pages/{quote(page_id, safe='')}/attachments"
        url = f"{listing_url}?limit={LIMIT}"
        while url:
            listing = self._json(url)
            for attachment in _results(listing):
                yield from self._attachment(attachment, base, by_item)
            url = self._next(listing)

    def _page_fetched(self, page: dict[str, Any], *, url: str, title: str, tag: str) -> Outcome:
        body = page.get("body")
        storage = body.get("storage") if isinstance(body, dict) else None
        value = storage.get("value") if isinstance(storage, dict) else None
        if not isinstance(value, str):
            return Failed(url, f"{url}: Confluence gave the page without its body: sync again")
        data = html_of(title, value)
        if len(data) > MAX_UPLOAD_BYTES:
            limit = size_said(MAX_UPLOAD_BYTES)
            return Failed(url, f"{url}: {len(data)} bytes, over the size limit of {limit}")
        name = f"{_slug(title) or page['id']}.html"
        return Fetched(url, data, name, etag=tag, item_id=str(page["id"]))

    def _attachment(
        self, attachment: dict[str, Any], base: str, by_item: dict[str, PageState]
    ) -> Iterator[Outcome]:
        """What became of one attachment (nothing, for a file docchat does not read)."""
        item_id, name = str(attachment.get("id", "")), str(attachment.get("title", ""))
        links = _links(attachment)
        url = _joined(base, attachment.get("webuiLink") or links.get("webui"))
        download = attachment.get("downloadLink") or links.get("download")
        if not item_id or not url or not is_readable(name):
            return
        tag = _version(attachment)
        known = yield from self._moved(item_id, url, by_item)
        if known is not None and tag and known.etag == tag:
            yield NotModified(url)
            return
        size = attachment.get("fileSize")
        if isinstance(size, int) and size > MAX_UPLOAD_BYTES:
            limit = size_said(MAX_UPLOAD_BYTES)
            yield Failed(url, f"{url}: {size} bytes, over the size limit of {limit}, not fetched")
            return
        if not isinstance(download, str) or not download.startswith("/"):
            yield Failed(url, f"{url}: Confluence gave no download link: sync again")
            return
        yield self._download(self._api() + urlsplit(base).path + download, url, name, tag, item_id)

    def _download(self, where: str, url: str, name: str, tag: str, item_id: str) -> Outcome:
        """An attachment's bytes (Confluence redirects to its media host, which requests is
        not sent the credentials for)."""
        with self._request(where, stream=True) as response:
            if response.status_code == 401:
                raise Stopped(Failed(url, self._refused(response)))
            if response.status_code != 200:
                said = response.reason or "no reason given"
                return Failed(url, f"{url}: the download failed ({response.status_code} {said})")
            data = capped_body(response, limit=MAX_UPLOAD_BYTES)
        if data is None:
            limit = size_said(MAX_UPLOAD_BYTES)
            return Failed(url, f"{url}: over the size limit of {limit}, not fetched")
        return Fetched(url, data, name, etag=tag, item_id=item_id)

    def _moved(
        self, item_id: str, url: str, by_item: dict[str, PageState]
    ) -> Generator[Outcome, None, PageState | None]:
        """What the last sync knew of the item, unless it is at another address now (a page
        retitled or moved: its old address is removed, and it is a new document)."""
        known = by_item.get(item_id)
        if known is not None and known.url != url:
            del by_item[item_id]
            yield Deleted(known.url, f"moved to {url}")
            return None
        return known

    def _space_id(self) -> str:
        """The space's id, from its key."""
        found = self._json(f"{self._api()}/wiki/api/v2/spaces?keys={quote(self.source.space)}")
        for space in _results(found):
            if str(space.get("key", "")).lower() == self.source.space.lower() and space.get("id"):
                return str(space["id"])
        where, email = self.source.where, self.source.email
        reason = (
            f"{where}: Confluence lists no space {self.source.space} that {email} may read: check "
            "the space key (in the space's address) and that the account can view the space"
        )
        raise Stopped(Failed(where, reason))

    def _web_base(self, listing: dict[str, Any]) -> str:
        """Where the listing's web links are relative to (its `_links.base`): the site's."""
        base = _links(listing).get("base")
        site = self.source.site
        if isinstance(base, str) and base.startswith(site):
            return base.rstrip("/")
        return site + "/wiki"

    def _next(self, listing: dict[str, Any]) -> str:
        """The listing's next page, which must be on the site: the token is never sent elsewhere."""
        link = _links(listing).get("next")
        if not isinstance(link, str) or not link:
            return ""
        if link.startswith("/"):
            return self._api() + link
        if link.startswith(self._api() + "/"):
            return link
        where = self.source.where
        raise Stopped(Failed(where, f"{where}: Confluence gave a link off the site, not followed"))

    def _json(self, url: str) -> dict[str, Any]:
        """A v2 resource as JSON, or Stopped saying why not."""
        with self._request(url) as response:
            if response.status_code == 200:
                found = json_object(response)
                if found:
                    return found
                reason = f"{self.source.where}: Confluence answered with no JSON object: sync again"
                raise Stopped(Failed(self.source.where, reason))
            raise Stopped(Failed(self.source.where, self._failure(response)))

    def _failure(self, response: requests.Response) -> str:
        """Why a Confluence request failed, and what to do about it."""
        status, where, source = response.status_code, self.source.where, self.source
        if status == 401:
            return self._refused(response)
        if status == 403:
            return (
                f"{where}: Confluence refuses {source.email} (403): give the account permission "
                f"to view space {source.space}"
            )
        if status == 404:
            return f"{where}: not found (404): check the source's site and space"
        if status in THROTTLED:
            return (
                f"{where}: Confluence still answers {status} after {RETRIES} retries: sync "
                "again later"
            )
        said = _error_said(response) or response.reason or "no reason given"
        return f"{where}: Confluence answered {status} ({said}): sync again later"

    def _refused(self, response: requests.Response) -> str:
        said = _error_said(response) or response.reason or "Unauthorized"
        source = self.source
        return self._scrubbed(
            f"the Confluence API token in ${source.token_env} was refused "
            f"({response.status_code} {said}): check that it is an API token of {source.email} "
            f"for {source.site}, not expired or revoked, and sync again"
        )

    def _request(self, url: str, *, stream: bool = False) -> requests.Response:
        """One GET as the account, waiting out throttling as Retry-After says."""
        attempt = 0
        while True:
            try:
                response = self.session.get(
                    url,
                    auth=(self.source.email, self._token),
                    headers={"Accept": "application/json"},
                    timeout=TIMEOUT,
                    stream=stream,
                )
            except requests.RequestException as exc:
                said = f"cannot reach {self.source.site} ({type(exc).__name__}): sync again later"
                raise Stopped(Failed(self.source.where, f"{self.source.where}: {said}")) from exc
            if response.status_code in THROTTLED and attempt < RETRIES:
                response.close()
                self.sleep(wait_asked(response, attempt))
                attempt += 1
                continue
            return response

    def _api(self) -> str:
        return api_root(self.source.site)

    def _token_from_environment(self) -> str:
        token = self.environ.get(self.source.token_env, "")
        if not token:
            var, email = self.source.token_env, self.source.email
            reason = (
                f"${var} is not set: export the Confluence API token of {email} as {var} and "
                "sync again"
            )
            raise Stopped(Failed(self.source.where, reason))
        return token

    def _scrubbed(self, text: str) -> str:
        """`text` without the token, should a service ever echo it."""
        return text.replace(self._token, "***") if self._token else text


def html_of(title: str, storage: str) -> bytes:
    """A page's storage-format body as an HTML document titled by the page's title (a `<title>`
    and an `<h1>`, so that the title holds whatever headings the body has). A macro's CDATA
    (a code block's text) becomes text, which an HTML parser would drop as a comment."""
    body = _CDATA.sub(lambda m: html.escape(m.group(1)), storage)
    said = html.escape(title)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{said}</title></head>'
        f"<body><h1>{said}</h1>\n{body}\n</body></html>\n"
    ).encode()


def _results(listing: dict[str, Any]) -> Iterator[dict[str, Any]]:
    results = listing.get("results")
    for result in results if isinstance(results, list) else []:
        if isinstance(result, dict):
            yield result


def _links(resource: dict[str, Any]) -> dict[str, Any]:
    links = resource.get("_links")
    return links if isinstance(links, dict) else {}


def _joined(base: str, link: object) -> str:
    """A web link relative to the site's base, absolute; "" without one."""
    return base + link if isinstance(link, str) and link.startswith("/") else ""


def _version(resource: dict[str, Any]) -> str:
    version = resource.get("version")
    number = version.get("number") if isinstance(version, dict) else None
    return str(number) if isinstance(number, int) else ""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:80]


def _error_said(response: requests.Response) -> str:
    """The title of a v2 error (`{"errors": [{"title": …}]}`), or ""."""
    errors = json_object(response).get("errors")
    first = errors[0] if isinstance(errors, list) and errors else None
    title = first.get("title") if isinstance(first, dict) else None
    return title if isinstance(title, str) else ""
