"""What Bedrock says of the chat model's lifecycle (ACTIVE or LEGACY), for /health.

Bedrock reports each foundation model's state in `modelDetails.modelLifecycle` of
GetFoundationModel (Bedrock user guide, "Model lifecycle", read 2026-12-01:
https://docs.aws.amazon.com/bedrock/latest/userguide/model-lifecycle.html); a LEGACY model still
answers until its end-of-life date. The chat model is named by an inference profile
(`global.anthropic.claude-sonnet-4-6`), whose id is the foundation model's with a geography in
front, so the geography is taken off rather than asking GetInferenceProfile too (one call, one
IAM action: bedrock:GetFoundationModel on the foundation model).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from docchat.errors import ConfigError
from docchat.llm import foundation_model_id


@dataclass
class BedrockModelLifecycle:
    """The configured model's lifecycle, asked of Bedrock once and then kept (a model moves
    to LEGACY months before its end of life; a failed lookup is asked again next time)."""

    client: Callable[[], Any]
    model_id: Callable[[], str]
    _found: dict[str, Any] | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __call__(self) -> dict[str, Any]:
        with self._lock:
            if self._found is None:
                self._found = self._look_up()
            return self._found

    def _look_up(self) -> dict[str, Any]:
        model_id = self.model_id()
        foundation = foundation_model_id(model_id)
        try:
            details = self.client().get_foundation_model(modelIdentifier=foundation)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise ConfigError(
                f"Bedrock did not say whether {foundation} is LEGACY "
                f"({error.get('Code', '')}: {error.get('Message', exc)}): the chat function's "
                "role needs bedrock:GetFoundationModel on "
                f"arn:<partition>:bedrock:<region>::foundation-model/{foundation}"
            ) from exc
        except BotoCoreError as exc:
            raise ConfigError(
                f"could not ask Bedrock whether {foundation} is LEGACY ({exc}): try again"
            ) from exc
        lifecycle = details.get("modelDetails", {}).get("modelLifecycle", {})
        status = str(lifecycle.get("status", "unknown"))
        found: dict[str, Any] = {
            "status": status,
            "model": model_id,
            "foundation_model": foundation,
        }
        if status != "LEGACY":
            return found
        found["legacy_since"] = _day(lifecycle.get("legacyTime"))
        found["end_of_life"] = _day(lifecycle.get("endOfLifeTime"))
        when = f"; it reaches end of life on {found['end_of_life']}" if found["end_of_life"] else ""
        found["note"] = (
            f"Bedrock marks {foundation} LEGACY{when}: set ChatModelId (DOCCHAT_MODEL_ID) to an "
            "Active Claude model"
        )
        return {k: v for k, v in found.items() if v != ""}


def _day(value: Any) -> str:
    return value.date().isoformat() if isinstance(value, datetime) else ""
