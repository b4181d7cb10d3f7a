"""Confluence Cloud on 127.0.0.1 for `docchat sync` of a Confluence source: graphsite's server
answering each request with a recorded response (tests/fixtures/confluence, copied from the
documentation pages its README cites) that the test routes by method, path and query. An
attachment's download redirects to Atlassian's media host, which is the same server asked as
localhost, so that the redirect is cross-host as it is on Atlassian Cloud."""

from __future__ import annotations

from tests.cli.graphsite import Graph, Recorded
from tests.cli.graphsite import recorded as _recorded
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "confluence"
SITE = "https://site.atlassian.net"  # the site the documentation's Link header names
MEDIA_HOST = "https://api.media.atlassian.com"


def recorded(name: str) -> Recorded:
    """The response tests/fixtures/confluence/NAME.http holds."""
    return _recorded(name, folder=FIXTURES)


class Confluence(Graph):
    """What the server answers and what it was asked; the media host's address is its own."""

    def _here(self, text: bytes) -> bytes:
        return text.replace(MEDIA_HOST.encode(), self.download_base.encode())
