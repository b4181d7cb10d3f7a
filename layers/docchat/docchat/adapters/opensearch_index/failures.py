"""opensearch-py's failures as docchat's search-index errors that say what to do: transport
errors, refused bulk items, and a Serverless collection whose access policy is not yet in effect."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opensearchpy import ConnectionError as OpenSearchConnectionError
from opensearchpy import ConnectionTimeout, SSLError, TransportError

from docchat.errors import SearchIndexError, SearchIndexNotReadyError, SearchIndexUnavailableError

#: Statuses worth retrying later: throttling and a gateway or node that is briefly away.
RETRYABLE_STATUSES = (429, 502, 503, 504)
_REASON_CHARS = 300


def check_bulk(response: dict[str, Any], labels: Sequence[str], *, action: str) -> None:
    """Raise for the failed items of a bulk response; a delete of a missing doc is no failure."""
    if not response.get("errors"):
        return
    failed: list[tuple[str, dict[str, Any]]] = []
    for label, entry in zip(labels, response.get("items", []), strict=False):
        for operation, item in entry.items():
            missing = operation == "delete" and item.get("status") == 404
            if "error" in item and not missing:
                failed.append((label, item))
    if not failed:
        return
    retryable = [item for _, item in failed if is_retryable(item.get("status"))]
    if retryable:
        raise SearchIndexUnavailableError(
            f"OpenSearch refused {len(retryable)} of {len(labels)} items while {action} "
            f"(status {retryable[0].get('status')}): it is overloaded, retry later"
        )
    label, item = failed[0]
    raise item_error(label, item, action=action, failures=len(failed))


def item_error(
    label: str, item: dict[str, Any], *, action: str, failures: int = 1
) -> SearchIndexError:
    """The error for a refused bulk item (or delete-by-query failure), retryable or not."""
    status = item.get("status")
    cause = item.get("error") or item.get("cause") or {}
    kind, reason = describe(cause)
    message = (
        f"OpenSearch refused {label} while {action} ({failures} failed; status {status}, "
        f"{kind}: {reason})"
    )
    if is_retryable(status):
        return SearchIndexUnavailableError(f"{message}: retry later")
    return SearchIndexError(f"{message}: check the index mapping against the chunk, then retry")


def is_retryable(status: Any) -> bool:
    """Whether an item's status is worth retrying later (throttled, or the server's fault)."""
    return isinstance(status, int) and (status == 429 or status >= 500)


def describe(error: Any) -> tuple[str, str]:
    """An error's type and its reason, cut short: reasons can quote field values."""
    if isinstance(error, dict):
        kind, reason = str(error.get("type", "error")), str(error.get("reason", ""))
    else:
        kind, reason = "error", str(error)
    if len(reason) > _REASON_CHARS:
        reason = reason[:_REASON_CHARS] + "..."
    return kind, reason


@contextmanager
def writing(action: str, *, serverless: bool) -> Iterator[None]:
    """`_translated` for writes: on OpenSearch Serverless a refusal (403) right after the stack
    made the collection is its data access policy not yet in effect (policies take minutes),
    so it is `SearchIndexNotReadyError`, which the Index step retries for minutes; the message
    still says what to grant if it never takes effect."""
    try:
        with translated(action):
            yield
    except SearchIndexError as exc:
        cause = exc.__cause__
        denied = isinstance(cause, TransportError) and cause.status_code == 403
        if not (serverless and denied):
            raise
        raise SearchIndexNotReadyError(
            f"{exc}. A collection's data access policy takes a few minutes to apply after it "
            "is made; an existing collection (ExistingOpenSearchEndpoint) needs one that "
            "grants the stack's roles (its output SearchIndexRoleArns) aoss:CreateIndex, "
            "aoss:DescribeIndex, aoss:UpdateIndex, aoss:ReadDocument and aoss:WriteDocument "
            "on index/<collection>/*"
        ) from cause


@contextmanager
def translated(action: str) -> Iterator[None]:
    """Turn opensearch-py errors into docchat's search-index errors that say what to do."""
    try:
        yield
    except ConnectionTimeout as exc:
        raise SearchIndexUnavailableError(
            f"OpenSearch did not answer in time while {action}: retry later, and check the "
            "cluster's load if it keeps happening"
        ) from exc
    except SSLError as exc:
        raise SearchIndexError(
            f"TLS with OpenSearch failed while {action} ({exc.info}): check the endpoint "
            "host name and that it serves a trusted certificate"
        ) from exc
    except OpenSearchConnectionError as exc:
        raise SearchIndexUnavailableError(
            f"could not reach OpenSearch while {action} ({exc.info}): check the endpoint URL "
            "and network access (VPC, security groups), then retry"
        ) from exc
    except TransportError as exc:
        raise status_error(exc, action) from exc


def status_error(exc: TransportError, action: str) -> SearchIndexError:
    """The error for an HTTP status OpenSearch answered with, saying what to do."""
    status = exc.status_code
    info = exc.info.get("error", exc.error) if isinstance(exc.info, dict) else exc.error
    kind, reason = describe(info)
    if status in RETRYABLE_STATUSES:
        return SearchIndexUnavailableError(
            f"OpenSearch is overloaded or unavailable ({status} {kind}) while {action}: retry later"
        )
    if status in (401, 403):
        return SearchIndexError(
            f"OpenSearch denied access ({status}) while {action}: allow this role in the "
            "collection's data access policy (Serverless) or the domain's access policy, "
            "and sign for the right service ('aoss' or 'es')"
        )
    if status == 413:
        return SearchIndexError(
            f"OpenSearch refused a request as too large while {action}: lower max_bulk_bytes"
        )
    return SearchIndexError(
        f"OpenSearch failed while {action} ({status} {kind}: {reason}): check the index "
        "name and mapping, or create the index again"
    )
