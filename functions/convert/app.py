"""Convert: PDF -> markdown pages, stored as an artifact.

The state machine calls it with the document (DocRef); with cloud OCR, a PDF whose pages need
OCR comes back with `ocr_ranges` instead of pages, and after the OCR step the state machine
calls it again with that result under `after_ocr` (AfterOcr) to build the pages with the OCR'd
lines."""

from typing import Any

from docchat.ingest.steps import convert, convert_with_ocr
from docchat.payloads import CONVERT_CALL, AfterOcr, ConvertResult
from docchat.processes import ConvertSettings
from docchat.wiring.cloud import services
from docchat.wiring.lambda_handler import step_handler


def _run(event: dict[str, Any]) -> ConvertResult:
    s = services("convert")
    settings = s.view(ConvertSettings)
    call = CONVERT_CALL.validate_python(event)
    if isinstance(call, AfterOcr):
        first = call.after_ocr
        return convert_with_ocr(first, objects=s.objects, registry=s.registry, settings=settings)
    return convert(call, objects=s.objects, registry=s.registry, settings=settings)


handler = step_handler("convert", _run)
