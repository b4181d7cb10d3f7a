"""Every relative link in README.md, CHANGELOG.md and docs/*.md points at a file that exists and,
with a #fragment, at a heading of that file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

DOCS = sorted([REPO / "README.md", REPO / "CHANGELOG.md", *(REPO / "docs").glob("*.md")])
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    """`text` without fenced blocks, where a `#` line is a shell comment, not a heading."""
    return _FENCE.sub("", text)


def anchors(text: str) -> set[str]:
    """The #fragments GitHub gives a Markdown file's headings."""
    seen: dict[str, int] = {}
    found = set()
    for heading in _HEADING.findall(_prose(text)):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(text: str) -> list[str]:
    """The relative link targets of a Markdown text (code spans and blocks left out)."""
    targets = _LINK.findall(_CODE.sub("", _prose(text)))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_anchors_are_github_slugs() -> None:
    text = (
        "# Over HTTP: `docchat serve` and the stack\n"
        "```sh\n# a shell comment\n```\n"
        "## Regions\n## Regions\n"
    )

    assert anchors(text) == {"over-http-docchat-serve-and-the-stack", "regions", "regions-1"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_doc_links_resolve(doc: Path) -> None:
    broken = []
    for target in links(doc.read_text()):
        path, _, fragment = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked.read_text()):
            broken.append(f"{target}: no such heading")

    assert broken == []
