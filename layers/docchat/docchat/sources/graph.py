"""Syncing one Microsoft Graph drive (a SharePoint document library, or a OneDrive): an app token
by client credentials, then the drive's delta feed page by page (`@odata.nextLink`) to its
`@odata.deltaLink`, from which the next sync asks only for what changed since. Each file docchat
reads is one outcome, as a crawled page is; what becomes of it (ingested, removed) is sync.py's.
The client secret is read from the environment when the sync starts and is sent only to the
token endpoint; no outcome, error or log carries it."""

from __future__ import annotations

from collections.abc import Iterator
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
from docchat.sources.store import GRAPH_URL, GraphSource, PageState
from docchat.sources.walk import ServiceWalk, Stopped

LOGIN_URL = "https://login.microsoftonline.com"
SCOPE = "https://graph.microsoft.com/.default"


class _Resync(Exception):
    """The delta link is stale (410): a full listing starts again at `location`."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


@dataclass
class DriveDelta(ServiceWalk[GraphSource]):
    """One sync of a drive `source`, from `cursor` (the last sync's delta link; "" lists the whole
    drive), given what the last sync knew of each file (`known`)."""

    _secret: str = ""
    _token: str = ""
    _drive: str = ""

    def outcomes(self) -> Iterator[Outcome]:
        """Each file the feed lists that docchat reads (or that was deleted), in feed order; a
        failure that stops the sync is the last outcome. `cursor` is the new delta link once the
        feed's last page is read."""
        by_item = {p.item_id: p for p in self.known.values() if p.item_id}
        try:
            self._secret = self._secret_from_environment()
            full = not self.cursor
            url = self.cursor or self._delta_start()
            while url:
                try:
                    page = self._json(url)
                except _Resync as resync:
                    full = True
                    url = resync.location or self._delta_start()
                    continue
                for item in page.get("value", []):
                    if isinstance(item, dict):
                        yield from self._settled(item, by_item)
                url = self._link(page.get("@odata.nextLink"))
                if not url:
                    self.cursor = self._link(page.get("@odata.deltaLink")) or self.cursor
                    self.complete = full
        except Stopped as stopped:
            self.complete = False
            yield stopped.failed

    def _settled(self, item: dict[str, Any], by_item: dict[str, PageState]) -> Iterator[Outcome]:
        """What became of one item of the feed (nothing, for a folder or a file docchat does not
        read)."""
        item_id = str(item.get("id", ""))
        known = by_item.get(item_id)
        if "deleted" in item:
            if known is not None:
                del by_item[item_id]
                yield Deleted(known.url, "deleted from the drive")
            return
        if "file" not in item:
            return  # a folder, the drive's root, a OneNote package
        url, name = str(item.get("webUrl", "")), str(item.get("name", ""))
        if known is not None and known.url != url:
            # Renamed or moved: its old place no longer shows it; it is a new document.
            del by_item[item_id]
            yield Deleted(known.url, f"moved to {url or 'a place docchat does not sync'}")
            known = None
        if not url or not is_readable(name):
            return
        # OneDrive for Business leaves cTag out of a delta feed; the eTag then stands for it.
        tag = str(item.get("cTag") or item.get("eTag") or "")
        if known is not None and tag and known.etag == tag:
            yield NotModified(url)
            return
        size = item.get("size")
        if isinstance(size, int) and size > MAX_UPLOAD_BYTES:
            limit = size_said(MAX_UPLOAD_BYTES)
            yield Failed(url, f"{url}: {size} bytes, over the size limit of {limit}, not fetched")
            return
        fetched = self._download(item, url=url, name=name, tag=tag)
        if isinstance(fetched, Fetched):  # the feed may list it again: it is not fetched twice
            by_item[item_id] = PageState(url=url, doc_id="", etag=tag, item_id=item_id)
        yield fetched

    def _download(self, item: dict[str, Any], *, url: str, name: str, tag: str) -> Outcome:
        """The file's bytes, from its pre-authenticated download URL when the feed gives one,
        else from its content, which redirects there (without the token: another host)."""
        given = item.get("@microsoft.graph.downloadUrl")
        signed = not (isinstance(given, str) and given.startswith("https://"))
        if signed:
            drive = quote(self._drive_id(), safe="!")
            given = f"{_graph()}/drives/{drive}/items/{quote(str(item['id']))}/content"
        response = self._request("GET", str(given), signed=signed, stream=True)
        with response:
            if response.status_code == 401 and signed:
                raise Stopped(Failed(url, self._refused(response)))
            if response.status_code != 200:
                said = _error_code(response) or response.reason or "no reason given"
                return Failed(url, f"{url}: the download failed ({response.status_code} {said})")
            data = capped_body(response, limit=MAX_UPLOAD_BYTES)
        if data is None:
            limit = size_said(MAX_UPLOAD_BYTES)
            return Failed(url, f"{url}: over the size limit of {limit}, not fetched")
        return Fetched(url, data, name, etag=tag, item_id=str(item["id"]))

    def _delta_start(self) -> str:
        return f"{_graph()}/drives/{quote(self._drive_id(), safe='!')}/root/delta"

    def _drive_id(self) -> str:
        """The drive's id: the source's own, or its site's default document library's."""
        if not self._drive and self.source.drive:
            self._drive = self.source.drive
        if not self._drive:
            site = self.source.site
            if site.startswith("https://"):
                parts = urlsplit(site)
                path = parts.path.rstrip("/")
                by_path = f":{quote(path)}" if path else ""
                found = self._json(f"{_graph()}/sites/{parts.hostname}{by_path}")
                site = str(found.get("id", ""))
            drive = self._json(f"{_graph()}/sites/{quote(site, safe=',')}/drive")
            self._drive = str(drive.get("id", ""))
            if not self._drive:
                raise Stopped(Failed(self.source.where, f"{self.source.where}: no drive found"))
        return self._drive

    def _link(self, link: object) -> str:
        """A next or delta link, which must be Graph's own: the token is never sent elsewhere."""
        if not isinstance(link, str) or not link:
            return ""
        if not link.startswith(_graph() + "/"):
            where = self.source.where
            said = f"{where}: Graph gave a link off {_graph()}, not followed"
            raise Stopped(Failed(where, said))
        return link

    def _json(self, url: str) -> dict[str, Any]:
        """A Graph resource as JSON, or Stopped / _Resync saying why not."""
        with self._request("GET", url) as response:
            status = response.status_code
            if status == 200:
                found = json_object(response)
                if found:
                    return found
                reason = f"{self.source.where}: Graph answered with no JSON object: sync again"
                raise Stopped(Failed(self.source.where, reason))
            if status == 410:
                raise _Resync(self._link(response.headers.get("Location", "")))
            raise Stopped(Failed(self.source.where, self._failure(response)))

    def _failure(self, response: requests.Response) -> str:
        """Why a Graph request failed, and what to do about it."""
        status, code, where = response.status_code, _error_code(response), self.source.where
        if status == 401:
            return self._refused(response)
        if status == 403:
            return (
                f"{where}: Microsoft Graph refuses app {self.source.client_id} ({code or 403}): "
                "grant it the Files.Read.All or Sites.Read.All application permission, with "
                "admin consent"
            )
        if status == 404:
            return f"{where}: not found ({code or 404}): check the source's drive or site"
        if status in THROTTLED:
            return (
                f"{where}: Microsoft Graph still answers {status} after {RETRIES} retries: "
                "sync again later"
            )
        said = code or response.reason or "no reason given"
        return f"{where}: Microsoft Graph answered {status} ({said}): sync again later"

    def _refused(self, response: requests.Response) -> str:
        code = _error_code(response) or str(response.status_code)
        return self._scrubbed(
            f"the Graph credentials were refused ({code}): check the client secret in "
            f"${self.source.secret_env} and that app {self.source.client_id} is registered in "
            f"tenant {self.source.tenant}"
        )

    def _request(
        self, method: str, url: str, *, signed: bool = True, stream: bool = False
    ) -> requests.Response:
        """One Graph request, signed with the app's token (asked for again once when Graph
        refuses it, as an hour-old token is), waiting out throttling as Retry-After says."""
        refreshed = False
        attempt = 0
        while True:
            headers = {"Authorization": f"Bearer {self._bearer()}"} if signed else {}
            try:
                response = self.session.request(
                    method, url, headers=headers, timeout=TIMEOUT, stream=stream
                )
            except requests.RequestException as exc:
                said = f"cannot reach Microsoft Graph ({type(exc).__name__}): sync again later"
                raise Stopped(Failed(self.source.where, f"{self.source.where}: {said}")) from exc
            if response.status_code in THROTTLED and attempt < RETRIES:
                response.close()
                self.sleep(wait_asked(response, attempt))
                attempt += 1
                continue
            if response.status_code == 401 and signed and not refreshed:
                response.close()
                self._token = ""
                refreshed = True
                continue
            return response

    def _bearer(self) -> str:
        """The app's access token, asked for by client credentials when there is none yet."""
        if self._token:
            return self._token
        tenant = quote(self.source.tenant, safe="")
        form = {
            "client_id": self.source.client_id,
            "scope": SCOPE,
            "client_secret": self._secret,
            "grant_type": "client_credentials",
        }
        url = f"{_login()}/{tenant}/oauth2/v2.0/token"
        try:
            response = self.session.post(url, data=form, timeout=TIMEOUT)
        except requests.RequestException as exc:
            said = f"cannot reach {_login()} ({type(exc).__name__}): sync again later"
            raise Stopped(Failed(self.source.where, said)) from exc
        with response:
            answer = json_object(response)
        token = answer.get("access_token")
        if response.status_code == 200 and isinstance(token, str) and token:
            self._token = token
            return token
        error = answer.get("error", response.status_code)
        first = str(answer.get("error_description", "")).strip().split("\r\n")[0].split("\n")[0]
        reason = self._scrubbed(
            f"the Graph credentials were refused ({error}{': ' + first if first else ''}): check "
            f"the client secret in ${self.source.secret_env} and that app "
            f"{self.source.client_id} is registered in tenant {self.source.tenant}"
        )
        raise Stopped(Failed(self.source.where, reason))

    def _secret_from_environment(self) -> str:
        secret = self.environ.get(self.source.secret_env, "")
        if not secret:
            raise Stopped(
                Failed(
                    self.source.where,
                    f"${self.source.secret_env} is not set: export the client secret of app "
                    f"{self.source.client_id} as {self.source.secret_env} and sync again",
                )
            )
        return secret

    def _scrubbed(self, text: str) -> str:
        """`text` without the secret, should a service ever echo it."""
        return text.replace(self._secret, "***") if self._secret else text


def _graph() -> str:
    return GRAPH_URL


def _login() -> str:
    return LOGIN_URL


def _error_code(response: requests.Response) -> str:
    """The code of a Graph error response (`{"error": {"code": …}}`), or ""."""
    error = json_object(response).get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else ""
