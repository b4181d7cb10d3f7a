"""OCR: read one range of a document's pages by OCR, store their lines as an artifact.

A container-image function (functions/ocr/Dockerfile): the OCR engine with onnxruntime and
OpenCV does not fit a zip function beside the docchat layer."""

from typing import Any

from docchat.ingest.steps import ocr_range
from docchat.payloads import OcrResult, OcrTask
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("artifacts_bucket",)


def _run(event: dict[str, Any]) -> OcrResult:
    s = services().require(*REQUIRED, entry="the ocr function")
    task = OcrTask.model_validate(event)
    return ocr_range(task, objects=s.objects, settings=s.settings)


handler = step_handler("ocr", _run)
