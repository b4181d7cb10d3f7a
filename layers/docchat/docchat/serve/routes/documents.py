"""Documents: listed, shown, read in the viewer, uploaded and deleted.

GET  /documents, /documents/{id}   (?collection=NAME lists one collection's)
GET  /collections          the collections the caller may read, with document counts
GET  /documents/{id}/file  the document's PDF for the page's viewer: locally the bytes
                           (application/pdf); in the cloud JSON {url, expires_in}, a presigned
                           S3 GET of a few minutes (API Gateway cannot carry large PDFs)
GET  /documents/{id}/pages/{n}   a page's text as conversion extracted it: {page, text, ocr}
POST /documents            a PDF as the raw body (?filename=...), indexed in the background
POST /documents/upload-url a presigned S3 PUT URL, where uploads go through the bucket
DELETE /documents/{id}     forget a document (in the cloud: delete its object)
PUT  /documents/{id}/collections  move a document between collections (registry only)

Documents are shown by name (`source_name`): server paths stay on the server. Every route sees
the documents through the caller's access (`AppState.reader`): a document in none of the
collections they may read is not found, exactly as a missing one.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.convertors import StringConvertor, register_url_convertor

from docchat.answer.backend import ChatBackend
from docchat.errors import DocumentNotFoundError, UnsupportedUploadError, UploadRouteError
from docchat.ingest.formats import FORMATS, SUFFIXES, suffix_of
from docchat.ingest.uploads import S3_UPLOAD_ROUTE, check_name
from docchat.limits import MAX_SCOPE_COLLECTIONS
from docchat.models import (
    COLLECTION_PATTERN,
    DEFAULT_COLLECTION,
    DocumentRecord,
    FileLink,
    PageKind,
    Removal,
    Scope,
    UploadTicket,
    collections_of,
    source_name,
)
from docchat.serve.errors import documented
from docchat.serve.schema import WHOLE
from docchat.serve.state import State

# application/octet-stream is what generic clients send for a file; like application/pdf, and
# unlike the types a page may send to another site without asking first (text/plain, forms,
# none at all), it cannot come from another site's page.
PDF_TYPES = ("application/pdf", "application/x-pdf", "application/octet-stream")
#: A name of a type docchat reads (formats.FORMATS), as the schema documents it.
DOCUMENT_NAME = r"(?i)\.(" + "|".join(s.lstrip(".") for s in SUFFIXES) + ")$"
router = APIRouter(prefix="/documents", tags=["documents"])
collections_router = APIRouter(prefix="/collections", tags=["documents"])


class DocId(StringConvertor):
    """A document id in a path: any segment but `upload-url`, whose own route is POST only (so
    that GET /documents/upload-url is a 405 naming POST, not a search for that document)."""

    regex = "(?!upload-url$)[^/]+"


register_url_convertor("doc_id", DocId())


class ShownDocument(DocumentRecord):
    """A document as the API shows it: `source` is its name, never its path on the server."""


class DocumentList(BaseModel):
    documents: list[ShownDocument]


class PageText(BaseModel):
    page: int
    text: str
    ocr: bool
    # What the page is: a PDF page, or a section, slide or sheet range of another format,
    # with the label a citation shows ("" for a PDF page).
    kind: PageKind = "page"
    label: str = ""


class CollectionInfo(BaseModel):
    name: str
    documents: int = Field(description="documents in it that you may read")
    write: bool = Field(description="whether you may upload into it and delete from it")


class CollectionList(BaseModel):
    collections: list[CollectionInfo]
    admin: bool = Field(description="whether you may read and change every collection")


class UploadUrlRequest(BaseModel):
    model_config = ConfigDict(strict=True)

    collection: str = Field(
        DEFAULT_COLLECTION,
        pattern=COLLECTION_PATTERN,
        description="the collection the document goes into (you must be allowed to write it)",
    )

    # The pattern is documented, not enforced here: a type docchat does not read is a 415.
    filename: str = Field(
        min_length=1, max_length=255, json_schema_extra={"pattern": DOCUMENT_NAME}
    )
    size: Annotated[int, Field(gt=0), WHOLE] = Field(
        description="the file's exact size in bytes; S3 holds the PUT to it"
    )


def shown(record: DocumentRecord) -> ShownDocument:
    """A document as the API shows it: named, never by its path on the server."""
    return ShownDocument(**{**record.model_dump(), "source": source_name(record.source)})


def known(backend: ChatBackend, doc_id: str) -> DocumentRecord:
    """The document's record, or DocumentNotFoundError (404)."""
    record = backend.library.document(doc_id)
    if record is None:
        raise DocumentNotFoundError(f"no document with id {doc_id!r}: GET /documents lists them")
    return record


def check_doc_ids(backend: ChatBackend, doc_ids: list[str] | None) -> None:
    """DocumentNotFoundError (404) naming every id of `doc_ids` that is no document."""
    unknown = [d for d in doc_ids or () if backend.library.document(d) is None]
    if unknown:
        raise DocumentNotFoundError(
            f"unknown document ids: {', '.join(unknown)}; GET /documents lists them"
        )


_READ = documented(404, 502, 503, 507)


CollectionQuery = Query(
    None, pattern=COLLECTION_PATTERN, description="only the documents of this collection"
)


@router.get("", responses=_READ)
def documents(
    http: Request, state: State, collection: str | None = CollectionQuery
) -> DocumentList:
    """The documents the caller may read (of one collection, when asked)."""
    scope = None if collection is None else Scope(collections=[collection])
    listed = state.reader(http, scope).library.documents()
    return DocumentList(documents=[shown(d) for d in listed])


@collections_router.get("", responses=documented(502, 503, 507))
def collections(http: Request, state: State) -> CollectionList:
    """The collections the caller may read, each with how many of its documents they see."""
    access = state.access(http)
    # Every collection the caller may read is listed, empty ones too; `default` always exists.
    readable = access.readable
    counts = dict.fromkeys(sorted(readable) if readable is not None else [DEFAULT_COLLECTION], 0)
    for record in state.reader(http).library.documents():
        for name in record.collections:
            if access.may_read(name):
                counts[name] = counts.get(name, 0) + 1
    return CollectionList(
        collections=[
            CollectionInfo(name=n, documents=c, write=access.may_write(n))
            for n, c in sorted(counts.items())
        ],
        admin=access.admin,
    )


@router.get("/{doc_id:doc_id}", responses=_READ)
def document(doc_id: str, http: Request, state: State) -> ShownDocument:
    return shown(known(state.reader(http), doc_id))


_PDF_OR_LINK: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "the file itself (local: a PDF inline, any other type as a download), "
        "or a short-lived presigned URL to it (cloud)",
        "content": {
            "application/pdf": {"schema": {"type": "string", "format": "binary"}},
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            "application/json": {"schema": FileLink.model_json_schema()},
        },
    }
}


@router.get(
    "/{doc_id:doc_id}/file",
    response_model=None,
    responses={**_PDF_OR_LINK, **documented(404, 409, 501, 502, 503, 507)},
)
def document_file(doc_id: str, http: Request, state: State) -> FileResponse | JSONResponse:
    """A registered document's file: its bytes, or (cloud) a short-lived URL to them."""
    record = known(state.reader(http), doc_id)
    found = state.files.pdf(record)
    if isinstance(found, FileLink):
        return JSONResponse(found.model_dump(), headers={"Cache-Control": "no-store"})
    pdf = suffix_of(record.file_name) == ".pdf"
    # Anything but a PDF is a download: an uploaded HTML file never runs as one of our pages.
    return FileResponse(
        found,
        media_type="application/pdf" if pdf else "application/octet-stream",
        content_disposition_type="inline" if pdf else "attachment",
        filename=record.file_name,
        headers={"Cache-Control": "private, no-cache", "X-Content-Type-Options": "nosniff"},
    )


@router.get("/{doc_id:doc_id}/pages/{number}", responses=documented(404, 422, 502, 503, 507))
def page_text(doc_id: str, number: int, http: Request, state: State) -> PageText:
    """What conversion extracted from one page: its text and whether OCR read it."""
    library = state.reader(http).library
    [page] = library.extracted_pages(doc_id, first=number, last=number)
    return PageText(
        page=page.number, text=page.markdown, ocr=page.ocr, kind=page.kind, label=page.label
    )


#: The body types an upload may declare: a PDF's, bytes, or its own format's media type (an
#: Office type, text/html, text/markdown), but never text/plain (see `upload`).
UPLOAD_TYPES = tuple(
    dict.fromkeys(
        [*PDF_TYPES, *(f.media_type for f in FORMATS.values() if f.media_type != "text/plain")]
    )
)
_PDF_BODY = {
    "requestBody": {
        "required": True,
        "description": "the file's bytes, declared as a PDF, as bytes (application/octet-stream) "
        "or as its own format's type; a type other than the name's is a 415",
        "content": {
            kind: {"schema": {"type": "string", "format": "binary"}} for kind in UPLOAD_TYPES
        },
    }
}


@router.post(
    "",
    status_code=202,
    openapi_extra=_PDF_BODY,
    responses=documented(409, 415, 501, 503, 507, body=True),
)
async def upload(
    request: Request,
    state: State,
    filename: str = Query(
        min_length=1, max_length=255, json_schema_extra={"pattern": DOCUMENT_NAME}
    ),
    collection: str = Query(
        DEFAULT_COLLECTION,
        pattern=COLLECTION_PATTERN,
        description="the collection the document goes into (you must be allowed to write it)",
    ),
) -> ShownDocument:
    """Index the document (a PDF, an Office, HTML, Markdown or text file) sent as the body
    under `filename` into `collection` (in the background: QUEUED first)."""
    access = state.access(request)
    access.check_write(collection)
    store = await run_in_threadpool(lambda: state.uploads)
    if store.kind != "direct":
        raise UploadRouteError(S3_UPLOAD_ROUTE)
    fmt = check_name(filename)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    # The type is read from the name; the body's declared type must be one no other site's
    # page can send without asking first (a CORS preflight), so text/plain (and forms, and
    # none) never are. Any of UPLOAD_TYPES goes with any name, as the schema can only say.
    if kind not in UPLOAD_TYPES:
        wanted = fmt.media_type if fmt.name == "pdf" else "application/octet-stream"
        raise UnsupportedUploadError(
            f"the body is {kind or 'of no declared type'}: send the file with Content-Type: "
            f"{wanted}"
        )
    data = await request.body()  # BodyLimit stops it at the upload limit
    received = await run_in_threadpool(
        lambda: store.receive(filename, data, collection=collection, writer=access)
    )
    return shown(received)


@router.post("/upload-url", responses=documented(409, 415, 501, 502, 503, body=True))
def upload_url(body: UploadUrlRequest, http: Request, state: State) -> UploadTicket:
    """A presigned PUT of exactly this PDF into the documents bucket (cloud uploads), under
    `collections/<collection>/` unless it goes into the default collection."""
    access = state.access(http)
    access.check_write(body.collection)
    return state.uploads.upload_url(
        body.filename, size=body.size, collection=body.collection, writer=access
    )


@router.delete(
    "/{doc_id:doc_id}",
    response_model=Removal,
    responses={
        202: {"model": Removal, "description": "deleting"},
        **documented(404, 409, 501, 502, 503, 507),
    },
)
def delete(doc_id: str, http: Request, state: State) -> JSONResponse:
    """Forget a document: 200 when it is gone, 202 while its object's deletion is on its way.
    The caller must be allowed to write every collection it is in (it leaves them all)."""
    uploads = state.uploads  # a server that takes no uploads deletes nothing: 501 for any id
    record = known(state.reader(http), doc_id)
    state.access(http).check_change(
        record.collections, what=f"deleting document {doc_id} removes it from every collection"
    )
    removal = uploads.remove(doc_id)
    return JSONResponse(removal.model_dump(), 200 if removal.status == "deleted" else 202)


class MoveRequest(BaseModel):
    model_config = ConfigDict(strict=True)

    collections: list[Annotated[str, Field(pattern=COLLECTION_PATTERN)]] = Field(
        min_length=1,
        max_length=MAX_SCOPE_COLLECTIONS,
        description="the collections the document is to be in, exactly",
    )


@router.put(
    "/{doc_id:doc_id}/collections",
    responses=documented(400, 403, 404, 409, 501, 502, 503, 507, body=True),
)
def move(doc_id: str, body: MoveRequest, http: Request, state: State) -> ShownDocument:
    """Put a document in exactly these collections: its registry entry changes, nothing is
    embedded or indexed again. The caller must be allowed to write every collection it is
    in now and every one it enters."""
    record = known(state.reader(http), doc_id)
    wanted = collections_of(body.collections)
    access = state.access(http)
    access.check_change(
        record.collections, what=f"moving document {doc_id} changes every collection it is in"
    )
    for name in sorted(set(wanted) - set(record.collections)):
        access.check_write(name)
    return shown(state.uploads.move(doc_id, wanted))
