"""Convert: PDF -> markdown pages, stored as an artifact."""

from typing import Any

from docchat.cloud import services
from docchat.lambda_handler import step_handler
from docchat.models import ConvertResult, DocRef
from docchat.pipeline import convert


def _run(event: dict[str, Any]) -> ConvertResult:
    s = services()
    doc = DocRef.model_validate(event)
    return convert(doc, objects=s.objects, registry=s.registry, settings=s.settings)


handler = step_handler("convert", _run)
