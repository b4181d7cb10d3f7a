"""An HTML page nested deeper than a conversion follows is refused at once, with its own reason
(issue 44): 20,000 nested divs failed as corrupt_file with Python's RecursionError, and 200,000
took lexbor minutes to parse (its tree building costs the square of the depth)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from docchat.errors import NestingTooDeepError
from docchat.ingest.formats import convert
from docchat.ingest.formats.nesting import html_depth
from docchat.ingest.formats.safety import DEFAULT_LIMITS

DATA = Path("/work/shared/data/office/markitdown")
LIMIT = DEFAULT_LIMITS.max_html_depth


def _nested(depth: int, tag: str = "div") -> bytes:
    return (
        f"<html><body>{f'<{tag}>' * depth}deep text{f'</{tag}>' * depth}</body></html>"
    ).encode()


@pytest.mark.parametrize("depth", [20_000, 200_000])
def test_html_nested_past_the_limit_is_refused_at_once(depth: int) -> None:
    started = time.monotonic()
    with pytest.raises(NestingTooDeepError) as refused:
        convert("deep.html", _nested(depth))
    assert time.monotonic() - started < 2
    assert refused.value.code == "nested_too_deep"
    assert f"more than {LIMIT} deep" in str(refused.value)


def test_html_nested_to_the_limit_is_read() -> None:
    text = "\n".join(p.markdown for p in convert("deep.html", _nested(LIMIT - 3)).pages)
    assert "deep text" in text


def test_html_unclosed_paragraphs_list_items_and_cells_do_not_count_as_nesting() -> None:
    # Legacy HTML leaves out the end tags the standard lets it leave out
    rows = "".join(f"<tr><td>cell {n}<td>more" for n in range(2000))
    page = (
        "<html><body>"
        + "".join(f"<p>paragraph {n}" for n in range(2000))
        + "<ul>"
        + "".join(f"<li>item {n}" for n in range(2000))
        + f"</ul><table>{rows}</table><dl><dt>a<dd>b<dt>c<dd>d</dl>"
        + "<script>if (a<b) { '<div>'.repeat(9) }</script><!-- <div><div> --><br><img src=x>"
        + "</body></html>"
    )
    assert html_depth(page, stop_after=LIMIT) <= 6
    text = "\n".join(p.markdown for p in convert("legacy.html", page.encode()).pages)
    assert "paragraph 1999" in text and "item 1999" in text


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/office is absent")
@pytest.mark.parametrize("name", ["test_wikipedia.html", "test_blog.html"])
def test_html_real_pages_nest_far_below_the_limit(name: str) -> None:
    page = (DATA / name).read_text(errors="replace")
    assert 10 <= html_depth(page, stop_after=LIMIT) <= 40
