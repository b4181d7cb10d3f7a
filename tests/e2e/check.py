"""The pure parts of the post-deploy check: what a stack says about itself, what the chat
stream says, and whether a cited quote is on its page. No AWS here; tests/infra tests these."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# The environment variable `python -m tests.e2e` sets for pytest: the stack to check.
STACK_ENV = "DOCCHAT_E2E_STACK"
NEEDS = "make e2e needs AWS credentials, a region and STACK=<stack name>"
REQUIRED_OUTPUTS = (
    "DocumentsBucketName",
    "DocumentsTableName",
    "ChatApiUrl",
    "IngestStateMachineArn",
)
COGNITO_OUTPUTS = ("ChatUserPoolId", "ChatUserPoolClientId")
AUTH_KINDS = ("COGNITO", "IAM", "NONE")
# A stack whose last operation left it usable; ROLLBACK_COMPLETE means its creation failed.
USABLE_STATUSES = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")


class StackError(AssertionError):
    """The stack cannot be checked as it is: the message says why and what to do."""


class IngestFailedError(AssertionError):
    """The pipeline marked the document FAILED; the message carries the registry's reason."""


@dataclass(frozen=True)
class Stack:
    """What the check needs from a deployed stack's outputs and parameters."""

    name: str
    bucket: str
    table: str
    api_url: str  # as the stack gives it, trailing slash included
    state_machine_arn: str
    auth: str
    user_pool_id: str = ""
    client_id: str = ""
    chunk_context: str = "off"  # the ChunkContext parameter
    chat_model_id: str = ""  # the ChatModelId parameter
    rerank_model_id: str = ""  # the RerankModelId parameter ("" turns reranking off)
    artifacts_bucket: str = ""  # where access/groups.json maps Cognito groups to collections
    sync_function: str = ""  # the SyncFunctionName output

    def url(self, path: str) -> str:
        """`path` under the API's stage, whether or not the output ends with a slash."""
        return self.api_url.rstrip("/") + "/" + path.lstrip("/")


def stack_from_description(name: str, description: Mapping[str, Any]) -> Stack:
    """The stack from a CloudFormation DescribeStacks response.

    Shape: https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html
    (`Stacks[].StackStatus`, `Outputs[].OutputKey/OutputValue`,
    `Parameters[].ParameterKey/ParameterValue`; every declared parameter is listed, defaults too).
    """
    stacks = description.get("Stacks") or []
    if not stacks:
        raise StackError(f"stack {name!r} not found: check STACK and the region")
    found = stacks[0]
    status = str(found.get("StackStatus", ""))
    if status not in USABLE_STATUSES:
        raise StackError(
            f"stack {name!r} is {status}: deploy it (sam deploy) until it is CREATE_COMPLETE "
            "or UPDATE_COMPLETE"
        )
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in found.get("Outputs") or []}
    params = {p["ParameterKey"]: p.get("ParameterValue", "") for p in found.get("Parameters") or []}
    auth = params.get("ApiAuth", "")
    if auth not in AUTH_KINDS:
        raise StackError(f"stack {name!r} has ApiAuth={auth!r}; expected one of {AUTH_KINDS}")
    wanted = REQUIRED_OUTPUTS + (COGNITO_OUTPUTS if auth == "COGNITO" else ())
    missing = [key for key in wanted if not outputs.get(key)]
    if missing:
        raise StackError(
            f"stack {name!r} lacks the outputs {', '.join(missing)}: is it a docchat stack "
            "deployed from this template?"
        )
    return Stack(
        name=name,
        bucket=outputs["DocumentsBucketName"],
        table=outputs["DocumentsTableName"],
        api_url=outputs["ChatApiUrl"],
        state_machine_arn=outputs["IngestStateMachineArn"],
        auth=auth,
        user_pool_id=outputs.get("ChatUserPoolId", ""),
        client_id=outputs.get("ChatUserPoolClientId", ""),
        chunk_context=params.get("ChunkContext", "off"),
        chat_model_id=params.get("ChatModelId", ""),
        rerank_model_id=params.get("RerankModelId", ""),
        artifacts_bucket=outputs.get("ArtifactsBucketName", ""),
        sync_function=outputs.get("SyncFunctionName", ""),
    )


def missing_prerequisites(
    *, stack: str, credentials: bool, region: str | None, detail: str = ""
) -> str | None:
    """The one line `make e2e` prints when it cannot run, or None when it can."""
    if not stack:
        return f"{NEEDS}: no STACK given, skipped (e.g. make e2e STACK=docchat AWS_PROFILE=dev)"
    missing = [
        what
        for what, present in (("AWS credentials", credentials), ("region (AWS_REGION)", region))
        if not present
    ]
    if missing:
        why = f" ({' '.join(detail.split())})" if detail else ""
        return f"{NEEDS}: no {' and no '.join(missing)} found{why}, skipped"
    return None


# --- the chat stream ---------------------------------------------------------------------------

#: An answer that takes longer than this and arrives in one burst was buffered on its way.
STREAM_CHECKED_AFTER_S = 3.0


def unstreamed(arrivals: Sequence[float]) -> str | None:
    """Why the chat stream's lines (their arrival times, in seconds from the request) show a
    buffered response, or None when they came as they were written: the first line must come
    well before the last when the answer took a while (API Gateway's REST streaming and the
    Web Adapter's response_stream mode both have to work for that)."""
    if not arrivals or arrivals[-1] < STREAM_CHECKED_AFTER_S:
        return None
    first, last = arrivals[0], arrivals[-1]
    if last - first >= 0.25 * last:
        return None
    return (
        f"the chat stream arrived in one piece: first line after {first:.1f} s, last after "
        f"{last:.1f} s. Something buffers it: check the API's responseTransferMode STREAM, "
        "AWS_LWA_INVOKE_MODE=response_stream and the Web Adapter layer version"
    )


@dataclass(frozen=True)
class SseEvent:
    type: str
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


def sse_events(lines: Iterable[str]) -> Iterator[SseEvent]:
    """Server-sent events from the stream's lines, as the WHATWG parser reads them: fields
    `event` and `data` (one space after the colon dropped), data lines joined by newlines,
    comments (`:`) ignored, an event dispatched at a blank line and only if it has data.
    https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
    """
    kind, data = "", list[str]()
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SseEvent(kind or "message", "\n".join(data))
            kind, data = "", list[str]()
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            kind = value
        elif name == "data":
            data.append(value)
    if data:  # a stream cut before its final blank line: the spec drops it, we keep it visible
        yield SseEvent(kind or "message", "\n".join(data))


@dataclass
class ChatReply:
    """One answer from POST /chat, read from its events."""

    events: list[SseEvent]
    answer: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    passages: list[dict[str, Any]] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)
    done: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def passages_of(self, doc_id: str) -> list[dict[str, Any]]:
        return [p for p in self.passages if p.get("doc_id") == doc_id]

    def citations_of(self, doc_id: str) -> list[dict[str, Any]]:
        return [c for c in self.citations if c.get("doc_id") == doc_id]

    def searched(self) -> bool:
        return any(call.get("name") == "search_documents" for call in self.tool_calls)


def chat_reply(events: Iterable[SseEvent]) -> ChatReply:
    """The answer, passages, citations and end of a chat stream (answer/agent.py's event types)."""
    reply = ChatReply(events=list(events))
    text: list[str] = []
    for event in reply.events:
        if event.type == "delta":
            text.append(str(event.json().get("text", "")))
        elif event.type == "tool_call":
            reply.tool_calls.append(event.json())
        elif event.type == "sources":
            reply.passages.extend(event.json().get("passages", []))
        elif event.type == "citations":
            reply.citations = list(event.json().get("citations", []))
        elif event.type == "done":
            reply.done = event.json()
        elif event.type == "error":
            reply.error = event.json()
    reply.answer = "".join(text)
    return reply


# --- what the answers must show ----------------------------------------------------------------


def squash(text: str) -> str:
    """Text as a reader compares it: case, spacing, punctuation and line-break hyphens aside
    (the same normalisation as tests/cli's quote check)."""
    return re.sub(r"[\W_]+", "", text.casefold())


def page_texts(pdf: bytes) -> list[str]:
    """Each page's text layer, as pypdfium2 reads it."""
    import pypdfium2 as pdfium  # here, so that `make e2e` can say what it needs before installing

    document = pdfium.PdfDocument(pdf)
    try:
        return [page.get_textpage().get_text_range() for page in document]
    finally:
        document.close()


# A raised footnote mark PDFium puts at the end of a line ("services that 2\r\nare used"): not
# in the sentence a reader reads, nor in docchat's quote of it.
_LINE_END_MARK = re.compile(r" \d{1,2}\r?\n")


def unmarked(text: str) -> str:
    """A page's text as PDFium gives it, without the footnote marks that end its lines."""
    return _LINE_END_MARK.sub(" ", text)


def misplaced_quotes(citations: Sequence[Mapping[str, Any]], pages: Sequence[str]) -> list[str]:
    """Citations whose quote is not on the page they name, or, for a sentence a page break cuts,
    not begun on `page` and ended on `page_end`; described for a failure message."""
    squashed = [squash(unmarked(p)) for p in pages]
    wrong = []
    for cited in citations:
        page, quote = int(cited.get("page", 0)), str(cited.get("quote", ""))
        end = int(cited.get("page_end") or page)
        if not (1 <= page <= end <= len(squashed)) or not _on_pages(
            squash(quote), squashed[page - 1], squashed[end - 1] if end > page else None
        ):
            wrong.append(f"p. {page}: {quote[:120]!r}")
    return wrong


def _on_pages(quote: str, first: str, last: str | None) -> bool:
    """Whether `quote` is on `first`, or begins on it (20 characters at least) and ends on
    `last` (squashed texts)."""
    if not quote or quote in first:
        return bool(quote)
    return last is not None and any(
        quote[:k] in first and quote[k:] in last for k in range(20, len(quote) - 4)
    )


def chunk_version(chunk_id: str) -> str:
    """The version prefix a chunk id carries (`<doc_id>:<version[:12]>:<n>`, ingest/chunk.py)."""
    parts = chunk_id.split(":")
    if len(parts) != 3:
        raise ValueError(f"chunk id {chunk_id!r} is not <doc_id>:<version>:<number>")
    return parts[1]


def stale_passages(passages: Sequence[Mapping[str, Any]], version: str) -> list[str]:
    """Chunk ids of passages that belong to any version but `version` (the full hash)."""
    return [
        str(p["chunk_id"])
        for p in passages
        if not version.startswith(chunk_version(str(p["chunk_id"])))
    ]


def duplicate_passages(passages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Chunk ids of passages whose text and pages repeat another passage's: a document indexed
    twice shows up this way whatever its chunk ids say."""
    seen: dict[tuple[str, object, object], str] = {}
    repeated = []
    for p in passages:
        key = (squash(str(p.get("text", ""))), p.get("page_start"), p.get("page_end"))
        chunk_id = str(p.get("chunk_id"))
        if key in seen and seen[key] != chunk_id:
            repeated.append(chunk_id)
        seen.setdefault(key, chunk_id)
    return repeated


def changed_pdf(data: bytes, marker: str) -> bytes:
    """Different bytes with the same pages: a PDF comment after %%EOF, which readers skip
    (ISO 32000-1 7.2.3: `%` starts a comment). A new version, the same text."""
    return data + f"\n%docchat-e2e {marker}\n".encode()


def ingest_outcome(item: Mapping[str, Any] | None, version: str) -> str | None:
    """ "INDEXED" once the registry item shows `version` indexed, None while it is on its way;
    raises with the registry's reason when the pipeline failed it."""
    if item is None or item.get("version") != version:
        return None
    status = str(item.get("status", ""))
    if status == "FAILED":
        raise IngestFailedError(
            f"ingestion of {item.get('doc_id')} FAILED ({item.get('error_code') or 'no code'}): "
            f"{item.get('error') or 'no reason recorded'}"
        )
    return "INDEXED" if status == "INDEXED" else None


def describe_item(item: Mapping[str, Any] | None) -> str:
    """A registry item in a few words, for progress and timeout messages."""
    if item is None:
        return "no registry item yet"
    return f"{item.get('status')} version {str(item.get('version', ''))[:12]}"
