"""Documents: listed, shown, read in the viewer, uploaded and deleted.

GET  /documents, /documents/{id}
GET  /documents/{id}/file  the document's PDF for the page's viewer: locally the bytes
                           (application/pdf); in the cloud JSON {url, expires_in}, a presigned
                           S3 GET of a few minutes (API Gateway cannot carry large PDFs)
GET  /documents/{id}/pages/{n}   a page's text as conversion extracted it: {page, text, ocr}
POST /documents            a PDF as the raw body (?filename=...), indexed in the background
POST /documents/upload-url a presigned S3 PUT URL, where uploads go through the bucket
DELETE /documents/{id}     forget a document (in the cloud: delete its object)

Documents are shown by name (`source_name`): server paths stay on the server.
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
from docchat.ingest.formats import SUFFIXES, suffix_of
from docchat.ingest.uploads import S3_UPLOAD_ROUTE, check_name
from docchat.models import (
    DocumentRecord,
    FileLink,
    PageKind,
    Removal,
    UploadTicket,
    file_name,
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


class DocId(StringConvertor):
    """A document id in a path: any segment but `upload-url`, whose own route is POST only (so
    that GET /documents/upload-url is a 405 naming POST, not a search for that document)."""

    regex = "(?!upload-url$)[^/]+"


register_url_convertor("doc_id", DocId())


class ShownDocument(DocumentRecord):
    """A document as the API shows it: `source` is its name, never its path on the server."""

    file_name: str


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


class UploadUrlRequest(BaseModel):
    model_config = ConfigDict(strict=True)

    # The pattern is documented, not enforced here: a type docchat does not read is a 415.
    filename: str = Field(
        min_length=1, max_length=255, json_schema_extra={"pattern": DOCUMENT_NAME}
    )
    size: Annotated[int, Field(gt=0), WHOLE] = Field(
        description="the file's exact size in bytes; S3 holds the PUT to it"
    )


def shown(record: DocumentRecord) -> ShownDocument:
    """A document as the API shows it: named, never by its path on the server."""
    return ShownDocument(
        **{**record.model_dump(), "source": source_name(record.source)},
        file_name=file_name(record.source),
    )


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


@router.get("", responses=_READ)
def documents(state: State) -> DocumentList:
    return DocumentList(documents=[shown(d) for d in state.backend.library.documents()])


@router.get("/{doc_id:doc_id}", responses=_READ)
def document(doc_id: str, state: State) -> ShownDocument:
    return shown(known(state.backend, doc_id))


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
def document_file(doc_id: str, state: State) -> FileResponse | JSONResponse:
    """A registered document's file: its bytes, or (cloud) a short-lived URL to them."""
    record = known(state.backend, doc_id)
    found = state.files.pdf(record)
    if isinstance(found, FileLink):
        return JSONResponse(found.model_dump(), headers={"Cache-Control": "no-store"})
    pdf = suffix_of(source_name(record.source)) == ".pdf"
    # Anything but a PDF is a download: an uploaded HTML file never runs as one of our pages.
    return FileResponse(
        found,
        media_type="application/pdf" if pdf else "application/octet-stream",
        content_disposition_type="inline" if pdf else "attachment",
        filename=source_name(record.source),
        headers={"Cache-Control": "private, no-cache", "X-Content-Type-Options": "nosniff"},
    )


@router.get("/{doc_id:doc_id}/pages/{number}", responses=documented(404, 422, 502, 503, 507))
def page_text(doc_id: str, number: int, state: State) -> PageText:
    """What conversion extracted from one page: its text and whether OCR read it."""
    [page] = state.backend.library.extracted_pages(doc_id, first=number, last=number)
    return PageText(
        page=page.number, text=page.markdown, ocr=page.ocr, kind=page.kind, label=page.label
    )


_PDF_BODY = {
    "requestBody": {
        "required": True,
        "content": {kind: {"schema": {"type": "string", "format": "binary"}} for kind in PDF_TYPES},
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
) -> ShownDocument:
    """Index the document (a PDF, an Office, HTML, Markdown or text file) sent as the body
    under `filename` (in the background: QUEUED first)."""
    store = await run_in_threadpool(lambda: state.uploads)
    if store.kind != "direct":
        raise UploadRouteError(S3_UPLOAD_ROUTE)
    fmt = check_name(filename)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    # The type is read from the name; the body's declared type must be one no other site's
    # page can send without asking first, so text/plain (and forms, and none) never are.
    if kind not in (*PDF_TYPES, fmt.media_type) or kind == "text/plain":
        wanted = fmt.media_type if fmt.name == "pdf" else "application/octet-stream"
        raise UnsupportedUploadError(
            f"the body is {kind or 'of no declared type'}: send the file with Content-Type: "
            f"{wanted}"
        )
    data = await request.body()  # BodyLimit stops it at the upload limit
    return shown(await run_in_threadpool(store.receive, filename, data))


@router.post("/upload-url", responses=documented(409, 415, 501, 502, 503, body=True))
def upload_url(body: UploadUrlRequest, state: State) -> UploadTicket:
    """A presigned PUT of exactly this PDF into the documents bucket (cloud uploads)."""
    return state.uploads.upload_url(body.filename, size=body.size)


@router.delete(
    "/{doc_id:doc_id}",
    response_model=Removal,
    responses={
        202: {"model": Removal, "description": "deleting"},
        **documented(404, 409, 501, 502, 503, 507),
    },
)
def delete(doc_id: str, state: State) -> JSONResponse:
    """Forget a document: 200 when it is gone, 202 while its object's deletion is on its way."""
    removal = state.uploads.remove(doc_id)
    return JSONResponse(removal.model_dump(), 200 if removal.status == "deleted" else 202)
