"""Table cells found by docchat's converter against the expected cells of ../shared/data/tables
(143 tables on 78 real PDFs: ICDAR 2013 ground truth, tabula-java's and camelot's pinned
outputs), per kind (ruled, whitespace, unknown), and the cost of finding tables against raw PDFium.

    .venv/bin/python bench/tables.py [--runs 3] [--show NAME] [--data DIR]

Cell scores. Text is NFKC-normalised with whitespace collapsed (a cell's wrapped lines join with a
space); empty cells never count. Where an expectation carries an area hint (tabula `area`,
camelot `table_areas`/`table_regions`), found cells whose box centre lies outside it are blanked
first, so that other tables on the page do not count against it. Each expected table is aligned
with each table found on its page: rows are paired greedily by the cell texts they share, then
columns by the votes of the paired rows; an expected cell is matched when the paired row and
column hold the same text. It is scored against the found table matching most of its cells.
recall = matched / expected cells; precision = matched / cells of the found tables paired with an
expectation (plus, on ICDAR pages whose annotation is complete, every cell of a table found where
none is annotated); F1 = 2PR / (P + R). Cells are summed per kind, not averaged per table.

Speed, on the same pages, in CPU time (best of --runs): raw PDFium (load the page, its text,
close) against finding the tables on the open page as the converter does (text given), shown as
a multiple of raw. `bench/convert.py` checks the whole conversion's budget (>= 0.5 of raw).
The last line is the same as JSON.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium

from docchat.ingest.convert.glyphs import Glyphs
from docchat.ingest.convert.tables.cells import Table, table_markdown
from docchat.ingest.convert.tables.find import RuleProbe, find_tables

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tables"
KINDS = ("ruled", "whitespace", "unknown")
Area = tuple[float, float, float, float]


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def expected_cells(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return [[normalise(c) for c in row] for row in csv.reader(f)]


def area_of(entry: dict[str, Any], page: pdfium.PdfPage) -> Area | None:
    """The hint's area as left, bottom, right, top (origin bottom-left), if any."""
    hints = entry.get("hints") or {}
    width, height = page.get_size()
    if "area" in hints:
        value = hints["area"]["value"]
        if isinstance(value, str):  # "%top,left,bottom,right"
            t, left, b, r = (float(v) for v in value.lstrip("%").split(","))
            return (
                left * width / 100,
                height - b * height / 100,
                r * width / 100,
                height - t * height / 100,
            )
        t, left, b, r = value
        return left, height - b, r, height - t
    kwargs = hints.get("read_pdf_kwargs") or {}
    for key in ("table_areas", "table_regions"):
        if key in kwargs:
            x1, y1, x2, y2 = (float(v) for v in kwargs[key][0].split(","))
            return min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)
    return None


def cropped(table: Table, area: Area | None) -> list[list[str]]:
    """The table's normalised cells, those whose box centre is outside `area` blanked."""
    rows = []
    for row, boxes in zip(table.rows, table.boxes, strict=True):
        out = []
        for text, box in zip(row, boxes, strict=True):
            if area is None:
                out.append(normalise(text))
            elif box is None:
                out.append("")
            else:
                x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
                inside = area[0] - 2 <= x <= area[2] + 2 and area[1] - 2 <= y <= area[3] + 2
                out.append(normalise(text) if inside else "")
        rows.append(out)
    return rows


def align(
    expected: list[list[str]], got: list[list[str]], used: set[tuple[int, int]]
) -> set[tuple[int, int]]:
    """The cells of `got` (not in `used`) that match cells of `expected` once rows and columns
    are paired."""
    pairs = []
    for i, erow in enumerate(expected):
        ecount = Counter(c for c in erow if c)
        for j, grow in enumerate(got):
            common = sum(
                (
                    ecount & Counter(c for k, c in enumerate(grow) if c and (j, k) not in used)
                ).values()
            )
            if common:
                pairs.append((common, -abs(i - j), i, j))
    row_of: dict[int, int] = {}
    for _, _, i, j in sorted(pairs, reverse=True):
        if i not in row_of and j not in row_of.values():
            row_of[i] = j
    votes: Counter[tuple[int, int]] = Counter()
    for i, j in row_of.items():
        for a, text in enumerate(expected[i]):
            for b, found in enumerate(got[j]):
                if text and found == text and (j, b) not in used:
                    votes[(a, b)] += 1
    col_of: dict[int, int] = {}
    for (a, b), _ in sorted(votes.items(), key=lambda kv: (-kv[1], abs(kv[0][0] - kv[0][1]))):
        if a not in col_of and b not in col_of.values():
            col_of[a] = b
    hits = set()
    for i, j in row_of.items():
        for a, text in enumerate(expected[i]):
            b = col_of.get(a)
            if text and b is not None and b < len(got[j]) and got[j][b] == text:
                hits.add((j, b))
    return hits


def best_time(fn: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def raw_text(document: pdfium.PdfDocument, index: int) -> None:
    page = document[index]
    textpage = page.get_textpage()
    textpage.get_text_range()
    textpage.close()
    page.close()


def tables_on(document: pdfium.PdfDocument, index: int, runs: int) -> tuple[float, list[Table]]:
    """The tables of one page and the best CPU time to find them, the page open as the
    converter has it (its text read; a fresh glyph cache and probe each run)."""
    page = document[index]
    textpage = page.get_textpage()
    text = textpage.get_text_range()
    found: list[Table] = []

    def run() -> None:
        glyphs = Glyphs(textpage)
        found[:] = find_tables(page, textpage, glyphs, text, columns=False, probe=RuleProbe())

    cost = best_time(run, runs)
    textpage.close()
    page.close()
    return cost, found


def score(data: Path, runs: int, show: str) -> tuple[dict[str, Counter[str]], int, float, float]:
    manifest = json.loads((data / "manifest.json").read_text())
    by_page: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for entry in manifest:
        by_page[(entry["pdf"], entry["page"])].append(entry)
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    raw_s = found_s = 0.0
    for (pdf, number), entries in sorted(by_page.items()):
        document = pdfium.PdfDocument(str(data / pdf), password=entries[0].get("password"))
        raw_s += best_time(lambda d=document, i=number - 1: raw_text(d, i), runs)
        cost, tables = tables_on(document, number - 1, runs)
        found_s += cost
        page = document[number - 1]
        used: dict[int, set[tuple[int, int]]] = defaultdict(set)
        paired: set[int] = set()
        for entry in entries:
            expected = expected_cells(data / entry["csv"])
            area = area_of(entry, page)
            best: tuple[int, int | None, set[tuple[int, int]], list[list[str]]] = (
                0,
                None,
                set(),
                [],
            )
            for k, table in enumerate(tables):
                got = cropped(table, area)
                hits = align(expected, got, used[k])
                if len(hits) > best[0]:
                    best = (len(hits), k, hits, got)
            count, k, hits, got = best
            kind = totals[entry["kind"]]
            kind["tables"] += 1
            kind["exp"] += sum(1 for row in expected for c in row if c)
            kind["match"] += count
            if k is not None:
                kind["found"] += 1
                used[k] |= hits
                if k not in paired:
                    kind["got"] += sum(1 for row in got for c in row if c)
                    paired.add(k)
            if show and show in entry["csv"]:
                print(f"== {entry['csv']} ({entry['kind']}): matched {count}")
                for table in tables:
                    print(table_markdown(table), "\n")
        if any(e.get("complete_for_document") for e in entries):
            for k, table in enumerate(tables):
                if k not in paired:
                    totals["false tables"]["tables"] += 1
                    totals["false tables"]["got"] += sum(
                        1 for row in table.rows for c in row if c.strip()
                    )
        page.close()
        document.close()
    return totals, len(by_page), raw_s, found_s


def f1(counts: Counter[str]) -> tuple[float, float, float]:
    p = counts["match"] / counts["got"] if counts["got"] else 0.0
    r = counts["match"] / counts["exp"] if counts["exp"] else 0.0
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


def _row(kind: str, counts: Counter[str], p: float, r: float, f: float) -> str:
    numbers = f"{counts['tables']:>6} {counts['found']:>6} {counts['exp']:>9} {counts['got']:>9}"
    return f"{kind:<13} {numbers} {counts['match']:>7} {p:>6.3f} {r:>6.3f} {f:>6.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description="table cells found against expected cells")
    parser.add_argument("--runs", type=int, default=3, help="timing rounds per page; best counts")
    parser.add_argument("--show", default="", help="print the tables found for CSVs named so")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    if not (args.data / "manifest.json").is_file():
        sys.exit(f"{args.data}/manifest.json not found: pass --data DIR (shared/data/tables)")
    totals, pages, raw_s, found_s = score(args.data, args.runs, args.show)
    names = ("tables", "paired", "exp cells", "got cells", "matched", "P", "R", "F1")
    header = f"{'kind':<13} " + " ".join(f"{n:>{max(6, len(n))}}" for n in names)
    print(header)
    print("-" * len(header))
    result: dict[str, Any] = {}
    every: Counter[str] = Counter()
    for kind in KINDS:
        counts = totals[kind]
        every.update(counts)
        p, r, f = f1(counts)
        result[kind] = {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3)}
        print(_row(kind, counts, p, r, f))
    false = totals["false tables"]
    every["got"] += false["got"]
    print(
        f"{'false tables':<13} {false['tables']:>6} {'':>6} {'':>9} {false['got']:>9}"
        "   (found on complete ICDAR pages where none is annotated)"
    )
    p, r, f = f1(every)
    result["all"] = {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3)}
    print(_row("all", every, p, r, f))
    print(
        f"\nspeed on these {pages} table pages (CPU, best of {args.runs}): raw PDFium "
        f"{1000 * raw_s / pages:.2f} ms/page, finding tables {1000 * found_s / pages:.2f} ms/page "
        f"= {found_s / raw_s:.2f} x raw"
    )
    result["speed"] = {
        "pages": pages,
        "raw_ms": round(1000 * raw_s / pages, 3),
        "tables_ms": round(1000 * found_s / pages, 3),
        "tables_x_raw": round(found_s / raw_s, 3),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
