"""Claude through the anthropic SDK (2.x), on Amazon Bedrock or on the Anthropic API.

`ClaudeModel` streams one turn: each text delta as it arrives, then the turn's tool calls,
then `TurnEnd`. Whatever the SDK raises (before the stream or in the middle of it) becomes
the `ModelError` family, so the agent can tell "try again shortly" from "fix the configuration".

Two things SDK 2.x changed that this module depends on: it sends API version `2026-10-21`,
which refuses `temperature`/`top_p`/`top_k` (even at their defaults), and on Bedrock it also
puts `anthropic_version: "2026-10-21"` in the InvokeModel body, which ARN-versioned Bedrock
models (Sonnet 4.6 and older) refuse. So no sampling parameter is sent unless asked for, and
Bedrock bodies carry the version InvokeModel documents.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import anthropic
import httpx2
from anthropic.types import Message as ClaudeMessage
from pydantic import TypeAdapter

from docchat.errors import ConfigError, ModelAccessError, ModelError, ModelUnavailableError
from docchat.llm import (
    JsonObject,
    Message,
    ModelEvent,
    TextDelta,
    ToolSpec,
    ToolUse,
    TurnEnd,
)

# Claude Sonnet 4.6: the newest Sonnet that answers without thinking blocks unless asked. Sonnet
# 5 and later think adaptively by default, and a tool loop would then have to hand the signed
# thinking blocks back, which the `ChatModel` events do not carry.
ANTHROPIC_MODEL_ID = "claude-sonnet-4-6"
# Its global cross-Region inference profile, which every commercial Region may call; us., eu. or
# jp. keep requests in that geography. Sonnet 4.6 is on Bedrock's InvokeModel API with an
# ARN-versioned id, which this module's request shape (anthropic_version in the body) targets:
# https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock-legacy
# Read 2026-12-01 for issue 40 (Anthropic lists Sonnet 4.6 as Legacy): Anthropic's "Claude on
# Amazon Bedrock (legacy)" page, whose table's newest Sonnet is still Sonnet 4.6 (global: yes),
# and its "Model IDs and versioning" page name no newer Sonnet with a Bedrock inference profile
# id; newer models are on the Messages-API endpoint ("Claude in Amazon Bedrock"), a page not found
# then. So the default stays; /health says when Bedrock marks it LEGACY (adapters.bedrock_models).
BEDROCK_MODEL_ID = "global.anthropic.claude-sonnet-4-6"
# What the Bedrock user guide requires in an InvokeModel body for Claude.
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"
_JSON_OBJECT = TypeAdapter(JsonObject)  # a tool call's input, as the SDK parsed it from JSON
PROVIDERS = ("bedrock", "anthropic")

ClaudeClient = anthropic.Anthropic | anthropic.AnthropicBedrock

# Error `type`s of a stream's `error` event (Anthropic API) or exception frame (Bedrock),
# which the SDK raises as a bare `APIStatusError` with the stream's status, 200.
UNAVAILABLE_TYPES = frozenset(
    {
        "overloaded_error",
        "rate_limit_error",
        "api_error",
        "timeout_error",
        "throttlingexception",
        "internalserverexception",
        "serviceunavailableexception",
        "modeltimeoutexception",
        "modelstreamerrorexception",
        "modelnotreadyexception",
    }
)
ACCESS_TYPES = frozenset(
    {
        "authentication_error",
        "permission_error",
        "not_found_error",
        "billing_error",
        "accessdeniedexception",
        "resourcenotfoundexception",
    }
)
UNAVAILABLE_ERRORS = (
    anthropic.RateLimitError,
    anthropic.InternalServerError,
    anthropic.RequestTimeoutError,
)
ACCESS_ERRORS = (
    anthropic.AuthenticationError,
    anthropic.PermissionDeniedError,
    anthropic.NotFoundError,
    anthropic.PaymentRequiredError,
)
# Bedrock answers 400 when the id names no model, or a model that needs an inference profile.
MODEL_ID_HINTS = ("model identifier", "on-demand throughput", "inference profile")


class ClaudeModel:
    """A `ChatModel` backed by Claude: one streamed Messages API call per turn."""

    def __init__(
        self, *, client: ClaudeClient, model_id: str, temperature: float | None = None
    ) -> None:
        if not model_id.strip():
            raise ConfigError("the Claude model id is empty: set it, e.g. to " + ANTHROPIC_MODEL_ID)
        self._client = client
        self._model_id = model_id
        # None sends no sampling parameter: API version 2026-10-21 and Claude Sonnet 5 and
        # later answer 400 to any `temperature`, so set it only for a model that accepts it.
        # top_p is never sent: Claude 4.x and newer refuse it together with temperature.
        self._temperature = temperature

    @property
    def model_id(self) -> str:
        """The model id (Anthropic API) or model / inference profile id (Bedrock)."""
        return self._model_id

    def stream(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
    ) -> Iterator[ModelEvent]:
        """Text deltas as Claude writes them, then its tool calls, then `TurnEnd`."""
        request = self._request(
            system=system, messages=messages, tools=tools, max_tokens=max_tokens
        )
        final: ClaudeMessage | None = None
        streaming = False
        try:
            with self._client.messages.stream(**request) as events:
                for event in events:
                    streaming = True
                    if event.type == "text":
                        yield TextDelta(event.text)
                    elif event.type == "message_stop":
                        final = event.message
        except anthropic.APIConnectionError as exc:
            # SDKs from 2.x wrap a connection that breaks mid-stream as they wrap one never made.
            if not streaming:
                raise self._error_for(exc) from exc
            raise self._broke(exc) from exc
        except anthropic.APIError as exc:
            raise self._error_for(exc) from exc
        except httpx2.TransportError as exc:
            raise self._broke(exc) from exc
        except RuntimeError as exc:
            if "credentials" not in str(exc):
                raise
            raise ModelAccessError(
                f"no AWS credentials to call Claude model {self._model_id} on Bedrock ({exc}): "
                "give this process a role or set AWS credentials"
            ) from exc
        except ValueError as exc:
            raise ModelError(
                f"Claude model {self._model_id} sent a malformed stream ({exc}): try again"
            ) from exc
        yield from self._closing_events(final)

    def _request(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self._model_id,
            "max_tokens": max_tokens,
            "messages": list(messages),
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        extra: dict[str, Any] = {}
        if isinstance(self._client, anthropic.AnthropicBedrock):
            extra["anthropic_version"] = BEDROCK_ANTHROPIC_VERSION
        if self._temperature is not None:
            extra["temperature"] = self._temperature
        if extra:
            request["extra_body"] = extra
        return request

    def _closing_events(self, final: ClaudeMessage | None) -> Iterator[ModelEvent]:
        """The tool calls and `TurnEnd` of a finished message; an unfinished one is an error."""
        if final is None or final.stop_reason is None:
            raise ModelUnavailableError(
                f"the answer from Claude model {self._model_id} ended before the turn did: "
                "try again shortly"
            )
        for block in final.content:
            if block.type == "tool_use":
                arguments = (
                    _JSON_OBJECT.validate_python(block.input, strict=False)
                    if isinstance(block.input, dict)
                    else {}
                )
                yield ToolUse(id=block.id, name=block.name, input=arguments)
        usage = final.usage
        read = usage.cache_read_input_tokens or 0
        written = usage.cache_creation_input_tokens or 0
        yield TurnEnd(
            stop_reason=str(final.stop_reason),
            input_tokens=usage.input_tokens + read + written,
            output_tokens=usage.output_tokens,
            cache_read_tokens=read,
            cache_write_tokens=written,
        )

    def _broke(self, exc: Exception) -> ModelUnavailableError:
        return ModelUnavailableError(
            f"the connection to Claude model {self._model_id} broke mid-answer ({exc!r}): "
            "try again shortly"
        )

    def _error_for(self, exc: anthropic.APIError) -> ModelError:
        """The docchat error for an SDK error, saying whether to wait or to reconfigure."""
        what = error_detail(exc)
        if isinstance(exc, anthropic.APIConnectionError):
            return ModelUnavailableError(
                f"cannot reach Claude model {self._model_id} ({what}): try again shortly"
            )
        if not isinstance(exc, anthropic.APIStatusError):
            return ModelError(f"Claude model {self._model_id} failed: {what}")
        kind = str(exc.type or "").lower()
        if isinstance(exc, UNAVAILABLE_ERRORS) or kind in UNAVAILABLE_TYPES:
            if (exc.error_code or "").endswith("spend_limit_reached"):
                return ModelAccessError(
                    f"Claude model {self._model_id} refused: {what}; raise the spend limit "
                    "of the Anthropic organization or use another key"
                )
            return ModelUnavailableError(
                f"Claude model {self._model_id} is busy or unavailable ({what}): try again shortly"
            )
        wrong_id = isinstance(exc, anthropic.BadRequestError) and any(
            hint in what.lower() for hint in MODEL_ID_HINTS
        )
        if isinstance(exc, ACCESS_ERRORS) or kind in ACCESS_TYPES or wrong_id:
            return ModelAccessError(self._access_message(what))
        return ModelError(f"Claude model {self._model_id} refused the request: {what}")

    def _access_message(self, what: str) -> str:
        if isinstance(self._client, anthropic.AnthropicBedrock):
            region = self._client.aws_region
            return (
                f"no access to Claude model {self._model_id} on Bedrock in {region} ({what}): "
                "the first use of a Claude model in the account needs aws-marketplace:Subscribe "
                "and aws-marketplace:ViewSubscriptions for the caller and Anthropic's one-time "
                f"use-case form (Bedrock console in {region}); allow "
                "bedrock:InvokeModelWithResponseStream on the inference profile and its model to "
                "this role, and check that the inference profile id exists in that region"
            )
        return (
            f"no access to Claude model {self._model_id} on the Anthropic API ({what}): "
            "set ANTHROPIC_API_KEY or DOCCHAT_ANTHROPIC_API_KEY to a valid key, "
            "and check the model id"
        )


def error_detail(exc: anthropic.APIError) -> str:
    """The service's own words for an error: Anthropic's `error.message` or Bedrock's `message`."""
    if isinstance(exc, anthropic.APIStatusError) and exc.api_message:
        return exc.api_message
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return exc.message


def claude_model(
    *,
    provider: str,
    model_id: str | None = None,
    region: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
    http_client: httpx2.Client | None = None,
) -> ClaudeModel:
    """Claude on Bedrock or the Anthropic API; without a model id, the provider's default."""
    client: ClaudeClient
    if provider == "bedrock":
        try:
            client = anthropic.AnthropicBedrock(
                aws_region=region, timeout=timeout, max_retries=max_retries, http_client=http_client
            )
        except ValueError as exc:
            raise ConfigError(
                f"no AWS region for Claude on Bedrock ({exc}): set DOCCHAT_REGION or AWS_REGION"
            ) from exc
    elif provider == "anthropic":
        if not api_key:
            raise ConfigError(
                "set ANTHROPIC_API_KEY or DOCCHAT_ANTHROPIC_API_KEY to use Claude on the "
                "Anthropic API, or choose the provider 'bedrock'"
            )
        client = anthropic.Anthropic(
            api_key=api_key, timeout=timeout, max_retries=max_retries, http_client=http_client
        )
    else:
        raise ConfigError(
            f"unknown Claude provider {provider!r}: choose one of {', '.join(PROVIDERS)}"
        )
    default = BEDROCK_MODEL_ID if provider == "bedrock" else ANTHROPIC_MODEL_ID
    return ClaudeModel(client=client, model_id=model_id or default)
