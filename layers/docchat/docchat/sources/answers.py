"""What the SaaS sources (a Graph drive, a Confluence space) share in reading a service's
answers: its JSON object, and how long a throttled answer asks to be waited for."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import requests

#: Times a throttled (429) or unavailable (503) request is asked again before the sync gives up.
RETRIES = 3
#: The longest a Retry-After is waited for, in seconds.
LONGEST_WAIT = 300.0
THROTTLED = (429, 503)


def json_object(response: requests.Response) -> dict[str, Any]:
    """The response's JSON object, or {} when it holds none."""
    try:
        said = response.json()
    except ValueError:
        return {}
    return said if isinstance(said, dict) else {}


def wait_asked(response: requests.Response, attempt: int) -> float:
    """The seconds a throttled response asks for (Retry-After: seconds or an HTTP date), or a
    doubling back-off when it does not say; never more than LONGEST_WAIT."""
    said = response.headers.get("Retry-After", "").strip()
    try:
        seconds = float(said)
    except ValueError:
        try:
            seconds = (parsedate_to_datetime(said) - datetime.now(UTC)).total_seconds()
        except (TypeError, ValueError):
            seconds = 2.0**attempt
    return min(max(seconds, 0.0), LONGEST_WAIT)
