"""Rules from a page's vector paths: horizontal and vertical lines (stroked lines, thin filled
bars, the edges of rectangles such as cell backgrounds), merged where they continue each other,
and grouped into grids of rules that touch."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import TypeVar

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docchat.ingest.convert.glyphs import plain_function
from docchat.ingest.convert.tables.words import BBox, Frame

RULE_TOL = 2.0  # points: rules this close are one; a rule this near a crossing touches it
MIN_RULE = 4.0  # points: shorter axis-aligned edges are not rules
MAX_SEGMENTS = 6_000  # path segments looked at per page (charts, text drawn as outlines: none)
MAX_OBJECTS = 20_000
MAX_DEPTH = 4  # form objects inside form objects
Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
_PATH = pdfium_c.FPDF_PAGEOBJ_PATH
_FORM = pdfium_c.FPDF_PAGEOBJ_FORM
_DRAWN = frozenset((_PATH, _FORM))
_T = TypeVar("_T")


_P = ctypes.c_void_p
_INT = ctypes.c_int
_GET_OBJECT = plain_function("FPDFPage_GetObject", _P, _P, _INT)
_OBJECT_TYPE = plain_function("FPDFPageObj_GetType", _INT, _P)
# A page of a filing draws thousands of paths (cell rules, shaded rows): each is asked for its
# box, draw mode and segments through these, with addresses as plain integers.
_BOUNDS = plain_function("FPDFPageObj_GetBounds", _INT, _P, _P, _P, _P, _P)
_DRAW_MODE = plain_function("FPDFPath_GetDrawMode", _INT, _P, _P, _P)
_COUNT_SEGMENTS = plain_function("FPDFPath_CountSegments", _INT, _P)
_SEGMENT = plain_function("FPDFPath_GetPathSegment", _P, _P, _INT)
_SEGMENT_TYPE = plain_function("FPDFPathSegment_GetType", _INT, _P)
_SEGMENT_POINT = plain_function("FPDFPathSegment_GetPoint", _INT, _P, _P, _P)
_SEGMENT_CLOSE = plain_function("FPDFPathSegment_GetClose", _INT, _P)
_FORM_COUNT = plain_function("FPDFFormObj_CountObjects", _INT, _P)
_FORM_OBJECT = plain_function("FPDFFormObj_GetObject", _P, _P, ctypes.c_ulong)
_GET_MATRIX = plain_function("FPDFPageObj_GetMatrix", _INT, _P, _P)
_MOVETO = pdfium_c.FPDF_SEGMENT_MOVETO
_LINETO = pdfium_c.FPDF_SEGMENT_LINETO


@dataclass
class Rule:
    """A horizontal rule at y = `pos` from x = `a` to `b`, or a vertical one at x = `pos`."""

    pos: float
    a: float
    b: float


@dataclass
class Rules:
    """A page's horizontal and vertical rules."""

    across: list[Rule] = field(default_factory=list)
    down: list[Rule] = field(default_factory=list)

    def turned(self, frame: Frame) -> Rules:
        """The rules in `frame`'s upright coordinates."""
        found = Rules()
        boxes = [(r.a, r.pos, r.b, r.pos) for r in self.across]
        boxes += [(r.pos, r.a, r.pos, r.b) for r in self.down]
        for box in boxes:
            x0, y0, x1, y1 = frame.box(box)
            if y1 - y0 < 0.5:
                found.across.append(Rule(y0, x0, x1))
            else:
                found.down.append(Rule(x0, y0, y1))
        return Rules(merge(found.across), merge(found.down))


@dataclass
class Grid:
    """Rules that touch one another."""

    across: list[Rule]
    down: list[Rule]

    @property
    def table_like(self) -> bool:
        """More than a box round something: a rule inside the frame, across or down."""
        across, down = len(self.across), len(self.down)
        return (across >= 3 and down >= 1) or (down >= 3 and across >= 1)

    @property
    def bbox(self) -> BBox:
        """The box round the rules."""
        xs = [r.a for r in self.across] + [r.b for r in self.across] + [r.pos for r in self.down]
        ys = [r.pos for r in self.across] + [r.a for r in self.down] + [r.b for r in self.down]
        return min(xs), min(ys), max(xs), max(ys)


def page_rules(page: pdfium.PdfPage) -> Rules:
    """The page's rules: axis-aligned edges of its visible paths (in form objects too); none
    where the paths hold more than MAX_SEGMENTS segments (a chart, text drawn as outlines)."""
    raw = page.raw
    count = min(pdfium_c.FPDFPage_CountObjects(raw), MAX_OBJECTS)
    handle = ctypes.cast(raw, ctypes.c_void_p).value
    objects, kinds = _drawn(list(map(_GET_OBJECT, repeat(handle, count), range(count))))
    if not objects:
        return Rules()
    width, height = page.get_size()
    collector = _Collector(width * height)
    collector.objects(objects, kinds, _IDENTITY, 0)
    if collector.budget <= 0:
        return Rules()
    return Rules(merge(collector.rules.across), merge(collector.rules.down))


def _drawn(objects: list[int]) -> tuple[list[int], list[int]]:
    """The paths and form objects among `objects`, and their types: picked without a Python
    loop, as a filing's page holds thousands of text objects."""
    kinds = list(map(_OBJECT_TYPE, objects))
    wanted = list(map(_DRAWN.__contains__, kinds))
    return list(compress(objects, wanted)), list(compress(kinds, wanted))


class _Collector:
    """Walks page objects, collecting rules, within a budget of path segments."""

    def __init__(self, page_area: float) -> None:
        self.rules = Rules()
        self.budget = MAX_SEGMENTS
        self.page_area = page_area
        self._floats = (ctypes.c_float * 4)()
        self._bounds = [ctypes.addressof(self._floats) + 4 * i for i in range(4)]
        self._modes = (ctypes.c_int * 2)()
        self._fill, self._stroke = (ctypes.addressof(self._modes) + 4 * i for i in range(2))

    def objects(self, objects: list[int], kinds: list[int], ctm: Matrix, depth: int) -> None:
        """Walk `objects`, of PDFium object types `kinds`."""
        for obj, kind in zip(objects, kinds, strict=True):
            if kind == _PATH:
                self.path(obj, ctm)
            elif kind == _FORM and depth < MAX_DEPTH:
                inner = _compose(_matrix(obj), ctm)
                count = min(_FORM_COUNT(obj), MAX_OBJECTS)
                self.objects(
                    *_drawn([_FORM_OBJECT(obj, i) for i in range(count)]), inner, depth + 1
                )
            if self.budget <= 0:
                return

    def path(self, obj: int, ctm: Matrix) -> None:
        """One path's rules: a thin bar or line is one; a rectangle gives its four edges;
        anything else its axis-aligned straight segments."""
        box = self._box(obj, ctm)
        left, bottom, right, top = box
        width, height = right - left, top - bottom
        if width < MIN_RULE and height < MIN_RULE:
            return  # a dot, a bullet, a glyph drawn as a path
        if width * height > 0.6 * self.page_area or not self._visible(obj):
            return  # a page background or a frame round everything; an invisible path
        count = _COUNT_SEGMENTS(obj)
        if count <= 1:
            return
        self.budget -= count
        if self.budget <= 0:
            return
        if height <= RULE_TOL + 1 and width >= MIN_RULE:
            self.rules.across.append(Rule((top + bottom) / 2, left, right))
        elif width <= RULE_TOL + 1 and height >= MIN_RULE:
            self.rules.down.append(Rule((left + right) / 2, bottom, top))
        elif count <= 5 and count > 2 and _is_rectangle(obj, count):
            self.rules.across += [Rule(bottom, left, right), Rule(top, left, right)]
            self.rules.down += [Rule(left, bottom, top), Rule(right, bottom, top)]
        elif count > 2:
            for start, end in _segments(obj, count, _compose(_matrix(obj), ctm)):
                self._edge(start, end)

    def _box(self, obj: int, ctm: Matrix) -> BBox:
        _BOUNDS(obj, *self._bounds)
        left, bottom, right, top = self._floats
        if ctm == _IDENTITY:
            return left, bottom, right, top
        x0, y0 = _apply(ctm, left, bottom)
        x1, y1 = _apply(ctm, right, top)
        return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)

    def _visible(self, obj: int) -> bool:
        if not _DRAW_MODE(obj, self._fill, self._stroke):
            return False
        fill, stroke = self._modes
        return bool(fill or stroke)

    def _edge(self, start: tuple[float, float], end: tuple[float, float]) -> None:
        (x0, y0), (x1, y1) = start, end
        if abs(y1 - y0) <= 0.5 and abs(x1 - x0) >= MIN_RULE:
            self.rules.across.append(Rule((y0 + y1) / 2, min(x0, x1), max(x0, x1)))
        elif abs(x1 - x0) <= 0.5 and abs(y1 - y0) >= MIN_RULE:
            self.rules.down.append(Rule((x0 + x1) / 2, min(y0, y1), max(y0, y1)))


def _matrix(obj: int) -> Matrix:
    m = pdfium_c.FS_MATRIX()
    _GET_MATRIX(obj, ctypes.addressof(m))
    return m.a, m.b, m.c, m.d, m.e, m.f


def _compose(m: Matrix, n: Matrix) -> Matrix:
    """`m` then `n` (PDF's row-vector convention)."""
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = n
    return (
        a * a2 + b * c2,
        a * b2 + b * d2,
        c * a2 + d * c2,
        c * b2 + d * d2,
        e * a2 + f * c2 + e2,
        e * b2 + f * d2 + f2,
    )


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    a, b, c, d, e, f = m
    return a * x + c * y + e, b * x + d * y + f


def _is_rectangle(obj: int, count: int) -> bool:
    """A move and three or four straight lines."""
    if _SEGMENT_TYPE(_SEGMENT(obj, 0)) != _MOVETO:
        return False
    return all(_SEGMENT_TYPE(_SEGMENT(obj, i)) == _LINETO for i in range(1, count))


def _segments(
    obj: int, count: int, m: Matrix
) -> Iterator[tuple[tuple[float, float], tuple[float, float]]]:
    """The path's straight segments (closing ones too) in page space."""
    xy = (ctypes.c_float * 2)()
    x_at, y_at = ctypes.addressof(xy), ctypes.addressof(xy) + 4
    start: tuple[float, float] | None = None
    prev: tuple[float, float] | None = None
    for i in range(count):
        segment = _SEGMENT(obj, i)
        _SEGMENT_POINT(segment, x_at, y_at)
        point = _apply(m, xy[0], xy[1])
        kind = _SEGMENT_TYPE(segment)
        if kind == _MOVETO:
            start = point
        elif kind == _LINETO and prev is not None:
            yield prev, point
        if _SEGMENT_CLOSE(segment) and start is not None:
            yield point, start
        prev = point


def merge(rules: list[Rule]) -> list[Rule]:
    """Rules on one line (within RULE_TOL) that overlap or nearly touch become one."""
    merged: list[Rule] = []
    for group in runs(sorted(rules, key=lambda r: r.pos), key=lambda r: r.pos, gap=RULE_TOL):
        pos = sum(r.pos for r in group) / len(group)
        group.sort(key=lambda r: r.a)
        current = Rule(pos, group[0].a, group[0].b)
        for rule in group[1:]:
            if rule.a <= current.b + RULE_TOL:
                current.b = max(current.b, rule.b)
            else:
                merged.append(current)
                current = Rule(pos, rule.a, rule.b)
        merged.append(current)
    return merged


def runs(items: list[_T], *, key: Callable[[_T], float], gap: float) -> Iterator[list[_T]]:
    """Sorted items in runs whose consecutive keys differ by at most `gap`."""
    run: list[_T] = []
    for item in items:
        if run and key(item) - key(run[-1]) > gap:
            yield run
            run = []
        run.append(item)
    if run:
        yield run


def grids(rules: Rules) -> list[Grid]:
    """Sets of rules that touch (connected components) with two rules one way and one the
    other at least, 20 x 8 points or larger."""
    across, down = rules.across, rules.down
    if not across or not down or len(across) * len(down) > 400_000:
        return []
    parent = list(range(len(across) + len(down)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    tol = RULE_TOL + 1
    # Every pair is tested at once (a filing's page has dozens of rules each way); the pairs
    # come in the order of a loop over `across`, then `down`.
    h_pos, h_a, h_b = np.array([(h.pos, h.a, h.b) for h in across], dtype=np.float64).T
    v_pos, v_a, v_b = np.array([(v.pos, v.a, v.b) for v in down], dtype=np.float64).T
    touch = (
        (h_a[:, None] - tol <= v_pos)
        & (v_pos <= h_b[:, None] + tol)
        & (v_a - tol <= h_pos[:, None])
        & (h_pos[:, None] <= v_b + tol)
    )
    for i, j in zip(*(found.tolist() for found in np.nonzero(touch)), strict=True):
        parent[root(i)] = root(len(across) + j)
    groups: dict[int, Grid] = {}
    for i, h in enumerate(across):
        groups.setdefault(root(i), Grid([], [])).across.append(h)
    for j, v in enumerate(down):
        groups.setdefault(root(len(across) + j), Grid([], [])).down.append(v)
    found = []
    for grid in groups.values():
        if len(grid.across) + len(grid.down) >= 3 and grid.across and grid.down:
            left, bottom, right, top = grid.bbox
            if right - left >= 20 and top - bottom >= 8:
                found.append(grid)
    return found
