"""Syncing one Google Drive source (a shared drive, or a folder with its subfolders): an access
token for a service account (the OAuth 2.0 JWT bearer flow: an RS256-signed assertion sent to
Google's token endpoint), then on the first sync the start page token of Drive's changes and a
listing of the files (`files.list`, page by page by `nextPageToken`), and on each later sync
only the changes since (`changes.list` from the saved token to its `newStartPageToken`). Google
Docs, Sheets and Slides are exported as .docx, .xlsx and .pptx; other files docchat reads are
downloaded. Each is one outcome, as a crawled page is; what becomes of it is sync.py's.
The key is read from the environment when the sync starts and only signs the assertion; no
outcome, error or log carries it, nor the access token."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import requests
from pydantic import BaseModel, ValidationError

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
from docchat.sources.driveanswers import (
    ChangeList,
    DriveErrorBody,
    DriveFile,
    FileList,
    StartPageToken,
    drive_error,
    names_page_token,
    reasons,
)
from docchat.sources.serviceaccount import (
    GRANT,
    ServiceAccountKey,
    TokenAnswer,
    UnusableKey,
    assertion,
    key_from,
)
from docchat.sources.store import GoogleDriveSource, PageState
from docchat.sources.walk import ServiceWalk, Stopped

DRIVE_URL = "https://www.googleapis.com/drive/v3"
TOKEN_URL = "https://oauth2.googleapis.com/token"
SCOPE = "https://www.googleapis.com/auth/drive.readonly"
#: Results asked for per page (the most files.list and changes.list give).
PAGE_SIZE = 1000
#: files.export: "the exported content is limited to 10 MB".
EXPORT_LIMIT = 10 * 1024 * 1024
FOLDER = "application/vnd.google-apps.folder"
_OFFICE = "application/vnd.openxmlformats-officedocument"
#: Google's own formats, as the Office format docchat reads and its suffix.
EXPORTS = {
    "application/vnd.google-apps.document": (f"{_OFFICE}.wordprocessingml.document", ".docx"),
    "application/vnd.google-apps.spreadsheet": (f"{_OFFICE}.spreadsheetml.sheet", ".xlsx"),
    "application/vnd.google-apps.presentation": (f"{_OFFICE}.presentationml.presentation", ".pptx"),
}
#: The suffix a file docchat reads is given when its name has none.
SUFFIXES = {
    "application/pdf": ".pdf",
    f"{_OFFICE}.wordprocessingml.document": ".docx",
    f"{_OFFICE}.spreadsheetml.sheet": ".xlsx",
    f"{_OFFICE}.presentationml.presentation": ".pptx",
    "text/html": ".html",
    "text/markdown": ".md",
    "text/plain": ".txt",
}
_FIELDS = "id,name,mimeType,md5Checksum,modifiedTime,version,size,webViewLink,trashed,parents"
_CHANGE_FIELDS = (
    f"nextPageToken,newStartPageToken,changes(changeType,removed,fileId,file({_FIELDS}))"
)
_REMOVED = "deleted from Google Drive, or no longer shared with the service account"
_THROTTLING = ("userRateLimitExceeded", "rateLimitExceeded")
#: What files.get and changes.getStartPageToken take for a shared drive's files; the two
#: listings take both.
_SUPPORTS = {"supportsAllDrives": "true"}
_ALL_DRIVES = {**_SUPPORTS, "includeItemsFromAllDrives": "true"}


_M = TypeVar("_M", bound=BaseModel)


class _Resync(Exception):
    """The saved page token was refused: the source is listed whole again."""


@dataclass
class DriveChanges(ServiceWalk[GoogleDriveSource]):
    """One sync of a Google Drive `source`, from `cursor` (the page token of Drive's changes the
    last sync ended with; "" lists the drive or folder whole)."""

    _key: ServiceAccountKey | None = None
    _token: str = ""
    #: Folder id -> whether it is the source's folder or beneath it.
    _inside: dict[str, bool] = field(default_factory=dict)

    def outcomes(self) -> Iterator[Outcome]:
        """Each file docchat reads (or that went away), in Drive's order; a failure that stops
        the sync is the last outcome. `cursor` is the next sync's page token once read."""
        by_item = {p.item_id: p for p in self.known.values() if p.item_id}
        try:
            self._key = self._key_from_environment()
            if self.cursor:
                try:
                    relist = yield from self._changes(by_item)
                except _Resync:
                    relist = True
                if not relist:
                    return
            yield from self._listing(by_item)
        except Stopped as stopped:
            self.complete = False
            yield stopped.failed

    def _listing(self, by_item: dict[str, PageState]) -> Iterator[Outcome]:
        """Every file of the drive or folder; the changes token is taken first, so that what
        changes during the listing is asked for again next time."""
        drive = self.source.shared_drive
        scope = {"driveId": drive} if drive else {}
        start = self._json(StartPageToken, "/changes/startPageToken", {**scope, **_SUPPORTS})
        folders = [] if drive else [self._folder()]
        seen = set(folders)
        queries = [("trashed = false", {"corpora": "drive", "driveId": drive})] if drive else []
        while queries or folders:
            if not queries:
                queries.append((f"'{folders.pop(0)}' in parents and trashed = false", {}))
            query, corpus = queries.pop(0)
            token = ""
            while True:
                params = {"q": query, **corpus, **_ALL_DRIVES, "pageSize": str(PAGE_SIZE)}
                params["fields"] = f"nextPageToken,files({_FIELDS})"
                if token:
                    params["pageToken"] = token
                page = self._json(FileList, "/files", params)
                for file in page.files:
                    if file.mimeType == FOLDER and not drive and file.id not in seen:
                        self._inside[file.id] = True
                        seen.add(file.id)
                        folders.append(file.id)
                    yield from self._settled(file, by_item)
                token = page.nextPageToken
                if not token:
                    break
        self.cursor = start.startPageToken
        self.complete = True

    def _folder(self) -> str:
        """The source's folder id, once Drive shows it to the service account as a folder."""
        folder = self.source.folder
        found = self._json(DriveFile, f"/files/{folder}", {"fields": "id,mimeType", **_SUPPORTS})
        if found.mimeType != FOLDER:
            where = self.source.where
            said = f"{where}: {folder} is a file, not a folder: give the id of a folder"
            raise Stopped(Failed(where, said))
        self._inside[folder] = True
        return folder

    def _changes(self, by_item: dict[str, PageState]) -> Generator[Outcome, None, bool]:
        """What changed since the saved token; True when a folder changed, which Drive does not
        report for each file beneath it: the source is then listed whole."""
        token, relist = self.cursor, False
        drive = self.source.shared_drive
        while token:
            params = {"pageToken": token, **_ALL_DRIVES, "pageSize": str(PAGE_SIZE)}
            params["fields"] = _CHANGE_FIELDS
            if drive:
                params["driveId"] = drive
            page = self._json(ChangeList, "/changes", params, page_token=True)
            for change in page.changes:
                if change.changeType != "file":
                    continue  # a shared drive renamed, or its settings changed
                file = change.file
                if file is not None and file.mimeType == FOLDER:
                    relist = True
                elif change.removed or file is None:
                    yield from self._gone(change.fileId, by_item, _REMOVED)
                elif file.trashed:
                    yield from self._gone(file.id, by_item, "moved to the trash")
                elif not self._in_source(file):
                    yield from self._gone(file.id, by_item, "moved out of the folder")
                else:
                    yield from self._settled(file, by_item)
            token = page.nextPageToken
            if not token:
                self.cursor = page.newStartPageToken or self.cursor
        return relist

    def _gone(self, file_id: str, by_item: dict[str, PageState], why: str) -> Iterator[Outcome]:
        known = by_item.pop(file_id, None)
        if known is not None:
            yield Deleted(known.url, why)

    def _in_source(self, file: DriveFile) -> bool:
        """Whether a changed file is in the source (a shared drive's changes are its own)."""
        return bool(self.source.shared_drive) or any(self._beneath(p, 0) for p in file.parents)

    def _beneath(self, folder: str, depth: int) -> bool:
        """Whether `folder` is the source's folder or beneath it, asked of Drive up its parents
        (one the service account cannot see is not; nor a cycle, nor 64 folders up)."""
        if folder == self.source.folder:
            return True
        if folder not in self._inside:
            self._inside[folder] = False
            if depth < 64:
                params = {"fields": "id,parents", **_SUPPORTS}
                found = self._json(DriveFile, f"/files/{folder}", params, missing=True)
                self._inside[folder] = any(self._beneath(p, depth + 1) for p in found.parents)
        return self._inside[folder]

    def _settled(self, file: DriveFile, by_item: dict[str, PageState]) -> Iterator[Outcome]:
        """What became of one listed or changed file (nothing, for one docchat does not read)."""
        url, known = file.webViewLink, by_item.get(file.id)
        if known is not None and known.url != url:
            del by_item[file.id]
            yield Deleted(known.url, f"moved to {url or 'a place docchat does not sync'}")
            known = None
        name = _named(file)
        if not url or not name:
            return  # a folder, a form, a shortcut, a file docchat does not read
        # A Google Doc has no checksum; its modifiedTime moves with its content. The name is
        # compared too: a file renamed, its bytes the same, is read again to show its new name.
        version = file.md5Checksum or file.modifiedTime or file.version
        tag = f"{version} {name}" if version else ""
        if known is not None and tag and known.etag == tag:
            yield NotModified(url)
            return
        if file.size is not None and file.size > MAX_UPLOAD_BYTES:
            limit = size_said(MAX_UPLOAD_BYTES)
            said = f"{url}: {file.size} bytes, over the size limit of {limit}, not fetched"
            yield Failed(url, said)
            return
        fetched = self._download(file, url=url, name=name, tag=tag)
        if isinstance(fetched, Fetched):  # listed again later in the same sync: not fetched twice
            by_item[file.id] = PageState(url=url, doc_id="", etag=tag, item_id=file.id)
        yield fetched

    def _download(self, file: DriveFile, *, url: str, name: str, tag: str) -> Outcome:
        """A file's bytes (files.get with alt=media), or a Google Doc's export (files.export)."""
        export = EXPORTS.get(file.mimeType)
        if export is not None:
            path, params = f"/files/{file.id}/export", {"mimeType": export[0]}
        else:
            path, params = f"/files/{file.id}", {"alt": "media", **_SUPPORTS}
        with self._request(self._drive() + path, params, stream=True) as response:
            status, said_why = response.status_code, reasons(response)
            if status == 401:
                raise Stopped(Failed(url, self._refused(response)))
            if status == 403 and "exportSizeLimitExceeded" in said_why:
                limit = size_said(EXPORT_LIMIT)
                return Failed(
                    url,
                    f"{url}: Google Drive exports at most {limit} of a Google file, and this one "
                    f"is larger: split it, or save it as {export[1] if export else 'a file'} in "
                    "Drive and sync that",
                )
            if status != 200:
                said = ", ".join(said_why) or response.reason or "no reason given"
                return Failed(url, f"{url}: the download failed ({status} {said})")
            data = capped_body(response, limit=MAX_UPLOAD_BYTES)
        if data is None:
            limit = size_said(MAX_UPLOAD_BYTES)
            return Failed(url, f"{url}: over the size limit of {limit}, not fetched")
        return Fetched(url, data, name, etag=tag, item_id=file.id)

    def _json(
        self,
        model: type[_M],
        path: str,
        params: dict[str, str],
        *,
        page_token: bool = False,
        missing: bool = False,
    ) -> _M:
        """A Drive resource read as `model`, or Stopped saying why not (_Resync when the page
        token is refused; a model of nothing when `missing` and Drive finds no such file)."""
        with self._request(self._drive() + path, params) as response:
            status = response.status_code
            if status == 200:
                try:
                    return model.model_validate(json_object(response))
                except ValidationError:
                    where = self.source.where
                    said = f"{where}: Google Drive's answer could not be read: sync again"
                    raise Stopped(Failed(where, said)) from None
            error = drive_error(response)
            if page_token and status in (400, 404) and names_page_token(error):
                raise _Resync
            if missing and status == 404:
                return model.model_validate({"id": ""})
            raise Stopped(Failed(self.source.where, self._failure(response, error)))

    def _failure(self, response: requests.Response, error: DriveErrorBody) -> str:
        """Why a Drive request failed, and what to do about it."""
        status, where, email = response.status_code, self.source.where, self._email()
        reason = ", ".join(e.reason for e in error.errors if e.reason) or str(status)
        drive = bool(self.source.shared_drive)
        what = "shared drive" if drive else "folder"
        if status == 401:
            return self._refused(response)
        if status in THROTTLED or set(reasons(response)) & set(_THROTTLING):
            return (
                f"{where}: Google Drive still answers {status} ({reason}) after {RETRIES} "
                "retries: sync again later"
            )
        if status == 403:
            share = "add it to the shared drive" if drive else "share the folder with it"
            return f"{where}: Google Drive refuses {email} ({reason}): {share} (Viewer is enough)"
        if status == 404:
            shared = f"{email} is a member of it" if drive else f"it is shared with {email}"
            return f"{where}: not found ({reason}): check the {what}'s id, and that {shared}"
        said = error.message or response.reason or "no reason given"
        return f"{where}: Google Drive answered {status} ({said}): sync again later"

    def _refused(self, response: requests.Response) -> str:
        said = drive_error(response).message or response.reason or "Unauthorized"
        return self._scrubbed(
            f"Google Drive refused the service account's token ({response.status_code} {said}): "
            f"check the key in ${self.source.key_env} and that {self._email()} may use the Drive "
            "API, and sync again"
        )

    def _request(
        self, url: str, params: dict[str, str], *, stream: bool = False
    ) -> requests.Response:
        """One GET as the service account (its token asked for again once when Drive refuses
        it), waiting out throttling (429, 503, or 403 rateLimitExceeded) as Retry-After says."""
        refreshed, attempt = False, 0
        while True:
            headers = {"Authorization": f"Bearer {self._bearer()}"}
            try:
                response = self.session.get(
                    url, params=params, headers=headers, timeout=TIMEOUT, stream=stream
                )
            except requests.RequestException as exc:
                said = f"cannot reach Google Drive ({type(exc).__name__}): sync again later"
                raise Stopped(Failed(self.source.where, f"{self.source.where}: {said}")) from exc
            status = response.status_code
            throttled = status in THROTTLED or (
                status == 403 and bool(set(reasons(response)) & set(_THROTTLING))
            )
            if throttled and attempt < RETRIES:
                response.close()
                self.sleep(wait_asked(response, attempt))
                attempt += 1
                continue
            if status == 401 and not refreshed:
                response.close()
                self._token, refreshed = "", True
                continue
            return response

    def _bearer(self) -> str:
        """The service account's access token, asked for with a signed assertion when there
        is none yet."""
        if self._token:
            return self._token
        try:
            form = {"grant_type": GRANT, "assertion": self._assertion()}
            response = self.session.post(_token_url(), data=form, timeout=TIMEOUT)
        except requests.RequestException as exc:
            said = f"cannot reach {_token_url()} ({type(exc).__name__}): sync again later"
            raise Stopped(Failed(self.source.where, said)) from exc
        with response:
            try:
                answer = TokenAnswer.model_validate(json_object(response))
            except ValidationError:
                answer = TokenAnswer()
        if response.status_code == 200 and answer.access_token:
            self._token = answer.access_token
            return self._token
        error = answer.error or str(response.status_code)
        first = (answer.error_description.strip().splitlines() or [""])[0]
        reason = self._scrubbed(
            f"the Google service account key in ${self.source.key_env} was refused ({error}"
            f"{': ' + first if first else ''}): check that it is a current key of "
            f"{self._email()} (a deleted or disabled key is refused), and sync again"
        )
        raise Stopped(Failed(self.source.where, reason))

    def _assertion(self) -> str:
        key = self._key
        assert key is not None
        try:
            return assertion(key, scope=SCOPE, audience=_token_url(), now=int(time.time()))
        except UnusableKey as exc:
            raise Stopped(Failed(self.source.where, self._bad_key(str(exc)))) from None

    def _key_from_environment(self) -> ServiceAccountKey:
        var = self.source.key_env
        raw = self.environ.get(var, "")
        if not raw.strip():
            raise Stopped(
                Failed(
                    self.source.where,
                    f"${var} is not set: export a JSON key of the Google service account (the "
                    f"key file's contents) as {var} and sync again",
                )
            )
        try:
            return key_from(raw)
        except UnusableKey as exc:
            raise Stopped(Failed(self.source.where, self._bad_key(str(exc)))) from None

    def _bad_key(self, said: str) -> str:
        var = self.source.key_env
        return (
            f"${var} does not hold a service account's JSON key ({said}): export the key "
            f"file's contents as {var} and sync again"
        )

    def _email(self) -> str:
        return self._key.client_email if self._key is not None else "the service account"

    def _drive(self) -> str:
        return DRIVE_URL

    def _scrubbed(self, text: str) -> str:
        """`text` without the key or the token, should a service ever echo them."""
        for secret in (self._key.private_key if self._key else "", self._token):
            if secret:
                text = text.replace(secret, "***")
        return text


def _token_url() -> str:
    return TOKEN_URL


def _named(file: DriveFile) -> str:
    """The document's name: the file's own, an exported Google file's with the export's suffix
    (a file without a suffix gets its type's); "" for a file docchat does not read."""
    export = EXPORTS.get(file.mimeType)
    if export is not None:
        suffix = export[1]
        return file.name if file.name.lower().endswith(suffix) else f"{file.name}{suffix}"
    if is_readable(file.name):
        return file.name
    suffix = SUFFIXES.get(file.mimeType, "")
    return f"{file.name}{suffix}" if suffix else ""
