"""How deep an HTML page's elements nest, read from its tags before any parser builds a tree.

lexbor's tree building costs the square of the nesting depth (measured: 20,000 nested divs parse
in 0.85 s, 50,000 in 5.7 s; 200,000 ran into the 300 s conversion limit), and the walk over the
tree recurses once per level. So the depth is counted first, in one pass over the tags, with
the parser's rules for the end tags a page may leave out: a new <p> or block closes an open
<p>, a new <li> an open <li> of the same list, a cell or row the open one of the same table, and
an end tag closes up to its element. Void elements and raw text (script, style, comments) do
not nest. Where these rules guess, they guess shallow: a page is refused only when even this
count says it is deep.
"""

from __future__ import annotations

import functools
import re

from docchat.errors import NestingTooDeepError

_TAG = re.compile(r"<(?:(!--)|(/?)([A-Za-z][A-Za-z0-9:-]*)([^>]*)>)")
_COMMENT_END = "-->"


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


_VOID = _names("area base br col embed hr img input link meta param source track wbr keygen")
_RAW_TEXT = _names("script style textarea title xmp iframe noembed noframes plaintext")
# Start tags that close an open <p> (the HTML standard's "close a p element in button scope").
_CLOSES_P = _names(
    "address article aside blockquote details dialog div dl fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hgroup hr main menu nav ol p pre section summary table ul "
    "li dd dt"
)
_P = frozenset({"p"})
_P_SCOPE = _names("html table td th caption marquee object template button applet")
# A start tag that closes an open element of its own kind (or a sibling kind) down to a scope.
_SIBLINGS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "li": (frozenset({"li"}), _names("ul ol menu table")),
    "dd": (frozenset({"dd", "dt"}), _names("dl table")),
    "dt": (frozenset({"dd", "dt"}), _names("dl table")),
    "td": (frozenset({"td", "th"}), frozenset({"table"})),
    "th": (frozenset({"td", "th"}), frozenset({"table"})),
    "tr": (frozenset({"tr"}), frozenset({"table"})),
    "option": (frozenset({"option"}), frozenset({"select", "datalist"})),
}


def check_nesting(name: str, html: str, *, max_depth: int) -> None:
    """Refuse a page whose elements nest more than `max_depth` deep."""
    if html_depth(html, stop_after=max_depth) > max_depth:
        raise too_deep(name, max_depth)


def too_deep(name: str, max_depth: int) -> NestingTooDeepError:
    return NestingTooDeepError(
        f"{name!r} nests its elements more than {max_depth} deep (real pages nest 15 to 40; "
        "Chromium stops building a page at 512): open it in a browser, print or save it as a "
        "PDF, and upload that"
    )


def html_depth(html: str, *, stop_after: int) -> int:
    """The deepest nesting of `html`'s elements, counted up to `stop_after` + 1."""
    # One pass per tag, so the common cases go first: an end tag closing the innermost element,
    # and a block start with no <p> open (test_wikipedia.html, 10,500 tags: 0.64x the CPU).
    stack: list[str] = []
    deepest = position = 0
    search = _TAG.search
    while (tag := search(html, position)) is not None:
        comment, closing, element, attributes = tag.groups()
        position = tag.end()
        if comment:  # nothing in it is a tag
            end = html.find(_COMMENT_END, tag.start() + 4)
            position = len(html) if end < 0 else end + len(_COMMENT_END)
            continue
        element = element.lower()
        if closing:
            if stack and stack[-1] == element:
                stack.pop()
            else:
                _close(stack, element)
            continue
        if element in _VOID or attributes.rstrip().endswith("/"):
            continue
        _implied_ends(stack, element)
        stack.append(element)
        if len(stack) > deepest:
            deepest = len(stack)
            if deepest > stop_after:
                return deepest
        if element in _RAW_TEXT:
            text_end = _raw_text_end(element).search(html, position)
            position = len(html) if text_end is None else text_end.start()
    return deepest


@functools.cache
def _raw_text_end(element: str) -> re.Pattern[str]:
    return re.compile(rf"</{element}", re.IGNORECASE)


def _close(stack: list[str], element: str) -> None:
    """An end tag closes its element and whatever is open inside it; a stray one, nothing."""
    for depth in range(len(stack) - 1, -1, -1):
        if stack[depth] == element:
            del stack[depth:]
            return


def _implied_ends(stack: list[str], element: str) -> None:
    if element in _CLOSES_P and "p" in stack:
        _close_within(stack, _P, _P_SCOPE)
    if element in _SIBLINGS:
        _close_within(stack, *_SIBLINGS[element])


def _close_within(stack: list[str], kinds: frozenset[str], scope: frozenset[str]) -> None:
    """Close the innermost open element of `kinds` that sits inside the innermost `scope`."""
    for depth in range(len(stack) - 1, -1, -1):
        if stack[depth] in kinds:
            del stack[depth:]
            return
        if stack[depth] in scope:
            return
