"""The one Chromium each test module of tests/web drives (a module needing other flags makes
its own, as test_cross_site.py does)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.browser import launched_chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_chromium()
