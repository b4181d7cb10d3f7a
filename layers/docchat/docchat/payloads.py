"""Pydantic contracts of the cloud ingestion: the AWS events that start and end a run (S3's and
Step Functions' through EventBridge), and the payloads its steps hand each other, which are S3
pointers and counts, never document text (a Step Functions state holds at most 256 KiB)."""

from __future__ import annotations

from typing import Literal
from urllib.parse import unquote_plus

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator


class ObjectRef(BaseModel):
    """An S3 object as an event names it."""

    bucket: str = Field(min_length=3)
    key: str = Field(min_length=1)
    sequencer: str = ""

    @property
    def source(self) -> str:
        return f"{self.bucket}/{self.key}"


# S3's and Step Functions' events are outside data: each model declares only the fields docchat
# reads and ignores the rest at every depth (pydantic's default), so a field AWS adds or retypes
# (event-version 1.1's `aws-generated-tags` map on the bucket, say) cannot break ingestion.


class S3Bucket(BaseModel):
    name: str


class S3Object(BaseModel):
    """The object an S3 EventBridge event names. Its key arrives URL-encoded ("My+Report+%28final%29
    %C3%A9.pdf"): it is decoded as AWS's Powertools decodes it
    (`S3EventBridgeNotificationObject.key` uses `unquote_plus`)."""

    key: str
    sequencer: str = ""

    @field_validator("key")
    @classmethod
    def _decoded(cls, key: str) -> str:
        return unquote_plus(key)


class S3EventDetail(BaseModel):
    bucket: S3Bucket
    object: S3Object


class S3Event(BaseModel):
    """An EventBridge `Object Created` / `Object Deleted` event from S3
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html)."""

    detail_type: str = Field(alias="detail-type")
    detail: S3EventDetail

    def object_ref(self) -> ObjectRef:
        return ObjectRef(
            bucket=self.detail.bucket.name,
            key=self.detail.object.key,
            sequencer=self.detail.object.sequencer,
        )


class StepEvent(BaseModel):
    """What the state machine hands Register, Remove and MarkFailed: the S3 event and run."""

    event: S3Event
    execution_id: str = ""


class DocRef(BaseModel):
    """One version of one document, as it travels through the pipeline."""

    doc_id: str
    version: str
    bucket: str
    key: str
    execution_id: str = ""
    #: A synced object's page address (docchat.ingest.synced): its chunks' source.
    source_url: str = ""


class RegisterResult(BaseModel):
    action: Literal["process", "skip"]
    reason: str = ""
    doc: DocRef | None = None


class OcrRange(BaseModel):
    """Pages of one document for one OCR invocation; its results go to `key`."""

    pages: list[int] = Field(min_length=1)
    key: str


class ConvertResult(BaseModel):
    """Converted pages at `pages_key`; or, when pages need OCR that has not run yet, no pages
    (`pages_key` empty) and the `ocr_ranges` the OCR step reads, after which Convert runs again
    with this result as its event."""

    doc: DocRef
    title: str
    pages: int
    pages_key: str = ""
    ocr_ranges: list[OcrRange] = Field(default_factory=list)


class AfterOcr(BaseModel):
    """Convert's second call, after the OCR map: its first call's result (`after_ocr`), whose
    `ocr_ranges` the OCR step has read. The state machine names the call by this one key, so
    Convert never guesses which call a payload is from the fields it happens to carry."""

    after_ocr: ConvertResult


#: What Convert is called with: the document (its first call) or, after OCR, `AfterOcr`.
CONVERT_CALL: TypeAdapter[DocRef | AfterOcr] = TypeAdapter(DocRef | AfterOcr)


class OcrTask(BaseModel):
    """One item of the OCR map: a document and the pages to read."""

    doc: DocRef
    range: OcrRange


class OcrResult(BaseModel):
    doc: DocRef
    key: str
    pages: int
    lines: int


class ChunkResult(BaseModel):
    doc: DocRef
    title: str
    chunks: int
    batches: list[str]


class BatchTask(BaseModel):
    doc: DocRef
    batch_key: str


class BatchResult(BaseModel):
    doc: DocRef
    batch_key: str
    chunks: int


class FinalizeTask(BaseModel):
    doc: DocRef
    chunks: int


class FailureTask(BaseModel):
    """A failed run: the error name and the cause Step Functions caught."""

    event: S3Event
    execution_id: str = ""
    error: str = ""
    cause: str = ""


class StepResult(BaseModel):
    doc_id: str
    status: str
    detail: str = ""


class ExecutionStatusDetail(BaseModel):
    """What the watchdog reads of a `Step Functions Execution Status Change` event's detail
    (https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-integration.html).
    `input` is left out (null) when it is too large; `error` and `cause` are not in every event."""

    executionArn: str
    status: str
    input: str | None = None
    error: str | None = None
    cause: str | None = None


class ExecutionStatusEvent(BaseModel):
    """EventBridge `Step Functions Execution Status Change` for a run that did not succeed."""

    detail: ExecutionStatusDetail


class ExecutionFailure(BaseModel):
    """What Step Functions knows of a run that stopped: its input (the S3 event it started
    from), and the error and cause that ended it ("" where it has none)."""

    input: str
    error: str = ""
    cause: str = ""


class ScheduledSync(BaseModel):
    """What starts the sync function: the Input its EventBridge Scheduler schedule sends
    (template.yaml, SyncFunction), each value a context attribute the scheduler fills in
    (https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html),
    or `{}` / `{"source": NAME}` from a manual invoke, which syncs every source or only NAME."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schedule_arn: str = Field("", alias="schedule-arn")
    scheduled_time: str = Field("", alias="scheduled-time")
    execution_id: str = Field("", alias="execution-id")
    attempt_number: str = Field("", alias="attempt-number")
    source: str = ""
