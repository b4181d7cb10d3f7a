"""OCR: read one range of a document's pages by OCR, store their lines as an artifact.

A container-image function (functions/ocr/Dockerfile): the OCR engine with onnxruntime and
OpenCV does not fit a zip function beside the docchat layer."""

from typing import Any

from docchat.ingest.steps import ocr_range
from docchat.payloads import OcrResult, OcrTask
from docchat.processes import OcrSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> OcrResult:
    s = services("ocr")
    settings = s.view(OcrSettings)
    task = OcrTask.model_validate(event)
    return ocr_range(task, objects=s.objects, settings=settings)


handler = step_handler("ocr", _run)
