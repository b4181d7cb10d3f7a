"""The synced sources (docchat.sources): where documents come from besides uploads.

GET /sources   (?collection=NAME: one collection's) each source the caller may see, with what
               its last sync did: counts and the last failure, for the page's documents panel

A source is seen by whoever may read its collection, as its documents are; its credentials are
never among what is said of it (they are not where its state is kept).
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from docchat.models import COLLECTION_PATTERN, DEFAULT_COLLECTION
from docchat.serve.errors import documented
from docchat.serve.state import State

router = APIRouter(prefix="/sources", tags=["documents"])


class LastSync(BaseModel):
    at: datetime
    fetched: int
    unchanged: int
    removed: int
    failed: int
    skipped: int
    last_failure: str = Field("", description="the last page or file that failed, and why")
    skip_note: str = Field(
        "", description="the last page or file skipped (a broken link, robots.txt), and why"
    )


class SourceInfo(BaseModel):
    name: str
    kind: str = Field(description="web, sharepoint or confluence")
    url: str = Field(description="where its documents are synced from")
    collection: str
    documents: int = Field(description="documents synced from it")
    last_sync: LastSync | None = Field(description="null until it has been synced")


class SourceList(BaseModel):
    sources: list[SourceInfo]


@router.get("", responses=documented(502, 503, 507))
def sources(
    http: Request,
    state: State,
    collection: str | None = Query(
        None, pattern=COLLECTION_PATTERN, description="only the sources of this collection"
    ),
) -> SourceList:
    """The sources whose collection the caller may read (of one collection, when asked)."""
    access = state.access(http)
    synced = state.parts.sources
    listed = [] if synced is None else synced()["sources"]
    shown = []
    for found in listed:
        if "problem" in found:  # a stack's definition that cannot be read: /health says why
            continue
        info = SourceInfo.model_validate(
            {**found, "collection": found["collection"] or DEFAULT_COLLECTION}
        )
        if access.may_read(info.collection) and collection in (None, info.collection):
            shown.append(info)
    return SourceList(sources=shown)
