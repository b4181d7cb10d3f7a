"""Convert: PDF -> markdown pages, stored as an artifact."""

from typing import Any

from docchat.lambda_handler import step_handler
from docchat.models import ConvertResult, DocRef
from docchat.pipeline import convert
from docchat.wiring.cloud import services

#: The settings this function cannot run without (DOCCHAT_<NAME>), checked on each invocation.
REQUIRED = ("documents_table", "artifacts_bucket")


def _run(event: dict[str, Any]) -> ConvertResult:
    s = services().require(*REQUIRED, entry="the convert function")
    doc = DocRef.model_validate(event)
    return convert(doc, objects=s.objects, registry=s.registry, settings=s.settings)


handler = step_handler("convert", _run)
