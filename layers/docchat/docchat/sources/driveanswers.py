"""What docchat reads of Google Drive API v3's answers: the Files and Changes resources, their
lists, the start page token, and an error's reasons. Each model names only the fields docchat
reads; whatever else Drive gives is ignored."""

from __future__ import annotations

import requests
from pydantic import BaseModel, ValidationError

from docchat.sources.answers import json_object


class DriveFile(BaseModel):
    """What docchat reads of a Drive file (the Files resource)."""

    id: str
    name: str = ""
    mimeType: str = ""
    md5Checksum: str = ""
    modifiedTime: str = ""
    version: str = ""
    size: int | None = None  # an int64, which Drive's JSON gives as a string
    webViewLink: str = ""
    trashed: bool = False
    parents: list[str] = []


class FileList(BaseModel):
    files: list[DriveFile] = []
    nextPageToken: str = ""


class Change(BaseModel):
    """One change of the Changes resource: to a file, or to a shared drive itself."""

    changeType: str = "file"
    removed: bool = False
    fileId: str = ""
    file: DriveFile | None = None


class ChangeList(BaseModel):
    changes: list[Change] = []
    nextPageToken: str = ""
    newStartPageToken: str = ""


class StartPageToken(BaseModel):
    startPageToken: str


class DriveReason(BaseModel):
    reason: str = ""
    location: str = ""


class DriveErrorBody(BaseModel):
    code: int = 0
    message: str = ""
    errors: list[DriveReason] = []


class DriveError(BaseModel):
    """What docchat reads of a Drive error response."""

    error: DriveErrorBody = DriveErrorBody()


def drive_error(response: requests.Response) -> DriveErrorBody:
    try:
        return DriveError.model_validate(json_object(response)).error
    except ValidationError:
        return DriveErrorBody()


def reasons(response: requests.Response) -> list[str]:
    """The reasons a Drive error gives (`error.errors[].reason`); none for a success."""
    if response.status_code < 400:
        return []
    return [e.reason for e in drive_error(response).errors if e.reason]


def names_page_token(error: DriveErrorBody) -> bool:
    return any(e.location == "pageToken" for e in error.errors) or "pageToken" in error.message
