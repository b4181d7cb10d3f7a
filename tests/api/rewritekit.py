"""Writes that land on an existing document (issue 40), for the local server with a users file
and the cloud app behind Cognito alike: a same-named upload, a move and a delete each need write
on every collection the document is in now, a refusal is a 403 naming only collections the
caller may read, and a same-named upload into a collection the document was moved out of is a
document of its own.

The users (both fixtures): `ana` reads and writes `ferries`, `bo` reads and writes `bridges`,
`cy` writes both, `root` is an admin. `upload(user, name, collection, data)` sends a file the
way the server takes uploads (the body locally; in the cloud the presigned URL's ticket, then
the object and the registry entry Register would write) and returns the route's response."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from tests.pdfgen import make_pdf

Upload = Callable[[Any, str, str, bytes], httpx.Response]
Call = Callable[..., httpx.Response]


def pdf(words: str) -> bytes:
    return make_pdf([[("h1", "Budget"), ("body", words)]])


@dataclass
class Rewrites:
    call: Call
    upload: Upload
    ana: Any
    bo: Any
    cy: Any
    root: Any

    def run(self) -> None:
        self.a_moved_document_is_not_replaced_by_a_same_named_upload()
        self.a_private_upload_never_lands_where_others_read()

    def document(self, doc_id: str, user: Any = None) -> httpx.Response:
        return self.call("GET", f"/documents/{doc_id}", user or self.root)

    def settled(self, doc_id: str) -> dict[str, Any]:
        """The document as an admin sees it, once its indexing has ended (locally an upload is
        indexed in the background; a move waits for it, as a person would)."""
        deadline = time.monotonic() + 60
        while True:
            shown: dict[str, Any] = self.document(doc_id).json()
            if shown["status"] in ("INDEXED", "FAILED") or time.monotonic() > deadline:
                return shown
            time.sleep(0.05)

    def move(self, doc_id: str, collections: list[str], user: Any = None) -> httpx.Response:
        body = {"collections": collections}
        return self.call("PUT", f"/documents/{doc_id}/collections", user or self.root, json=body)

    def moved_upload(
        self, user: Any, name: str, collection: str, words: str, to: str
    ) -> tuple[str, dict[str, Any]]:
        """`user`'s upload of `name` into `collection`, settled, then moved to `to` by an
        admin: its id and its record before the move."""
        first = self.upload(user, name, collection, pdf(words))
        assert first.status_code in (200, 202), first.text
        moved = first.json()["doc_id"]
        before = self.settled(moved)
        assert self.move(moved, [to]).status_code == 200
        return moved, before

    def a_moved_document_is_not_replaced_by_a_same_named_upload(self) -> None:
        # Given ana's budget.pdf in ferries, which an admin moved to bridges
        moved, before = self.moved_upload(
            self.ana, "budget.pdf", "ferries", "Ferry budget 100", to="bridges"
        )

        # When ana uploads a file of that name into ferries again
        again = self.upload(self.ana, "budget.pdf", "ferries", pdf("Planted text 666"))

        # Then it is a document of its own in ferries; the moved one is as it was
        assert again.status_code in (200, 202), again.text
        own = again.json()["doc_id"]
        assert own != moved
        assert "bridges" not in again.text
        if again.status_code == 202:  # the local server shows the queued document
            assert again.json()["collections"] == ["ferries"]
        kept = self.settled(moved)
        assert (kept["version"], kept["collections"]) == (before["version"], ["bridges"])
        assert self.document(moved, self.bo).json()["version"] == before["version"]
        assert self.document(moved, self.ana).status_code == 404
        # and ana's next upload of the name is the next version of her own document
        self.settled(own)
        third = self.upload(self.ana, "budget.pdf", "ferries", pdf("Ferry budget 120"))
        assert third.status_code in (200, 202), third.text
        assert third.json()["doc_id"] == own
        self.settled(own)

        # Given the moved document is in ferries too, and so in two collections
        assert self.move(moved, ["bridges", "ferries"]).status_code == 200
        # Then ana, who may not write bridges, may not change it: not by a same-named upload,
        refused = self.upload(self.ana, "budget.pdf", "ferries", pdf("Planted text 667"))
        self.refused_without_naming(refused, "bridges")
        # nor by a move, nor by a delete
        self.refused_without_naming(self.move(moved, ["ferries"], self.ana), "bridges")
        deleted = self.call("DELETE", f"/documents/{moved}", self.ana)
        self.refused_without_naming(deleted, "bridges")
        kept = self.settled(moved)
        assert (kept["version"], kept["collections"]) == (before["version"], ["bridges", "ferries"])
        # while cy, who writes both, uploads its next version, and sees where it is
        revised = self.upload(self.cy, "budget.pdf", "ferries", pdf("Ferry budget 130"))
        assert revised.status_code in (200, 202), revised.text
        assert revised.json()["doc_id"] == moved
        if revised.status_code == 202:
            assert revised.json()["collections"] == ["bridges", "ferries"]
        self.settled(moved)

    def a_private_upload_never_lands_where_others_read(self) -> None:
        # Given bo's plan.pdf in bridges, moved by an admin to ferries, where ana reads it
        moved, before = self.moved_upload(
            self.bo, "plan.pdf", "bridges", "Bridge plan alpha", to="ferries"
        )

        # When bo uploads a private plan.pdf into bridges
        private = self.upload(self.bo, "plan.pdf", "bridges", pdf("Private bridge plan"))

        # Then ana's document is as it was, and bo's file is in bridges alone
        assert private.status_code in (200, 202), private.text
        assert private.json()["doc_id"] != moved
        assert "ferries" not in private.text
        shown = self.document(moved, self.ana).json()
        assert (shown["version"], shown["collections"]) == (before["version"], ["ferries"])
        mine = self.settled(private.json()["doc_id"])
        assert mine["collections"] == ["bridges"]

    def refused_without_naming(self, response: httpx.Response, hidden: str) -> None:
        """A 403 that names no collection the caller may not read."""
        assert response.status_code == 403, response.text
        error = response.json()["error"]
        assert error["code"] == "access_denied"
        assert hidden not in error["message"]
        assert "a collection you cannot see" in error["message"]
