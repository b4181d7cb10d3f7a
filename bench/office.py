"""Run every file of /work/shared/data/office through the real ingest path and print:

1. per file: the outcome of `docchat ingest` into a temporary data directory as `docchat
   status` reports it (ok = INDEXED, or the typed reason's code), the outcome expected, and how
   many of the texts its source suite asserts are in `docchat text` of that document (`suite`),
   plus the first texts python-docx / python-pptx saw when the set was assembled (`seen`, from
   manifest.json's `observed`), and the locations (pages, sections, slides, sheets) indexed;
2. per format: locations per second of formats.convert, against the library's own raw text
   extraction on the same files in the same run (ratio = raw time / our time; target >= 0.5),
   on the suite's files and on larger generated ones.

Suite expectations are written below by hand from manifest.json's `expected` entries: a
quoted text the document's text must contain (markdown links written as their text, a
markitdown "## x" heading as "# x", which any heading level contains), a text that must not
appear, or the typed reason the file must be refused with. Entries that assert no text
(image part counts, core properties, hyperlink addresses, comment authors) are listed in
`UNCHECKED` with why.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from tests import officegen as samples

from docchat.cli import main as docchat
from docchat.errors import ConversionError
from docchat.ingest.formats import convert
from docchat.ingest.formats.safety import DEFAULT_LIMITS, open_package
from docchat.ingest.formats.text import decoded
from docchat.ingest.local import source_of
from office_peak import memory_table

DATA = Path("/work/shared/data/office")
RLINK_SECRET = "de658225-569e-4e3d-9ed2-cfb6abf927fc"  # what markitdown's test writes there


@dataclass
class Expect:
    outcome: str = "ok"
    contains: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)


EXPECT: dict[str, Expect] = {
    "python-docx/blk-inner-content.docx": Expect(contains=["P1\n| T2 |  |", "P3"]),
    "python-docx/sct-inner-content.docx": Expect(contains=["P1\n| T2 |  |\n| --- | --- |\nP3"]),
    "python-docx/tbl-cell-access.docx": Expect(
        contains=[
            "| 4 | 5 | 6 |",
            "| 4 |  | 6 |\n| 7 | 8 | 9 |",
            "| 4 | 5 | 6 |\n| 7 |  | 9 |",
            "| 4 |  | 6 |\n|  |  | 9 |",
        ]
    ),
    "python-docx/par-rendered-page-breaks.docx": Expect(
        contains=["Page break here>><<followed by more text.", "Page break in>><<this hyperlink"]
    ),
    "python-docx/having-images.docx": Expect(outcome="empty_document"),
    "python-docx/tbl-having-tables.docx": Expect(outcome="empty_document"),
    "python-docx/doc-coreprops.docx": Expect(outcome="empty_document"),
    "python-pptx/tbl-cell.pptx": Expect(contains=["| unladen swallows |", "| merged cell |  |  |"]),
    "python-pptx/sld-notes.pptx": Expect(contains=["Notes:\nNotes"]),
    "python-pptx/prs-notes.pptx": Expect(contains=["Notes:\nNotes"]),
    "python-pptx/shp-shapes.pptx": Expect(contains=["| shapes[3] |  |\n| --- | --- |"]),
    "python-pptx/txt-text.pptx": Expect(contains=["Foo Bar", "abc", "a b c"]),
    "python-pptx/act-props.pptm": Expect(outcome="has_macros"),
    "python-pptx/minimal.pptx": Expect(outcome="empty_document"),
    "python-pptx/shp-groupshape.pptx": Expect(outcome="empty_document"),
    "python-pptx/shp-access-ole-object.pptx": Expect(outcome="empty_document"),
    "openpyxl/formulae.xlsx": Expect(
        contains=["| 12345 |", "| 24690 |", "| 49380 |", "Düsseldorf"]
    ),
    "openpyxl/bigfoot.xlsx": Expect(outcome="empty_document"),
    "openpyxl/comments.xlsx": Expect(contains=["# Sheet1", "# Sheet2", "# Sheet3"]),
    "openpyxl/contains_chartsheets.xlsx": Expect(
        contains=["# data", "# moredata"], absent=["# chart"]
    ),
    "openpyxl/vba-test.xlsm": Expect(outcome="has_macros"),
    "openpyxl/merge_range.xlsx": Expect(contains=["|  | 10 |"]),
    "openpyxl/empty_libre.xlsx": Expect(
        contains=[
            "# Sheet1 - Text",
            "# Sheet2 - Numbers",
            "# Sheet3 - Formulas",
            "# Sheet4 - Dates",
        ]
    ),
    "openpyxl/null_file.xlsx": Expect(outcome="corrupt_file"),
    "openpyxl/null_archive.xlsx": Expect(outcome="corrupt_file"),
    "markitdown/test.docx": Expect(
        contains=[
            "314b0a30-5b04-470b-b9f7-eed2c2bec74a",
            "49e168b7-d2ae-407f-a055-2167576f39a1",
            "## d666f1f7-46cb-42bd-9a39-9a39cf2a509f",
            "# Abstract",
            "# Introduction",
            "AutoGen: Enabling Next-Gen LLM Applications via Multi-Agent Conversation",
        ]
    ),
    "markitdown/test_with_comment.docx": Expect(contains=["# Abstract"]),
    "markitdown/equations.docx": Expect(contains=["m=1"]),
    "markitdown/rlink.docx": Expect(
        absent=["ZGU2NTgyMjUtNTY5ZS00ZTNkLTllZDItY2ZiNmFiZjk", RLINK_SECRET]
    ),
    "markitdown/test.xlsx": Expect(
        contains=[
            "# 09060124-b5e7-4717-9d07-3c046eb",
            "6ff4173b-42a5-4784-9b19-f49caff4d93d",
            "affc7dad-52dc-4b98-9b5d-51e65d8a8ad0",
        ]
    ),
    "markitdown/test.xls": Expect(outcome="unsupported_format"),
    "markitdown/test.pptx": Expect(
        contains=[
            "2cdda5c8-e50e-4db4-b5f0-9722a649f455",
            "04191ea8-5c73-4215-a1d3-1cfb43aaaf12",
            "44bf7d06-5e7a-4a40-a2e1-a2e42ef28c8a",
            "1b92870d-e3b5-4e65-8153-919f4ff45592",
            "AutoGen: Enabling Next-Gen LLM Applications via Multi-Agent Conversation",
            "a3f6004b-6f4f-4ea8-bee3-3741f4dc385f",
            "2003",
            "This phrase of the caption is Human-written.",
        ]
    ),
    "markitdown/random.bin": Expect(outcome="unsupported_format"),
    "markitdown/random.bin as .pptx": Expect(outcome="corrupt_file"),
    "markitdown/test_blog.html": Expect(
        contains=[
            "Large language models (LLMs) are powerful tools that can generate natural language "
            "texts for various applications, such as chatbots, summarization, translation, and "
            "more. GPT-4 is currently the state of the art LLM in the world. Is model selection "
            "irrelevant? What about inference parameters?",
            "an example where high cost can easily prevent a generic complex",
        ]
    ),
    "markitdown/test_wikipedia.html": Expect(
        contains=[
            "Microsoft entered the operating system (OS) business in 1980 with its own "
            "version of Unix",
            "Microsoft was founded by Bill Gates",
        ],
        absent=[
            "You are encouraged to create an account and log in",
            "154 languages",
            "move to sidebar",
        ],
    ),
    # markitdown compares its whole output with the .md beside it; lines of that .md here (a
    # PDF goes through docchat's PDF path, not formats.convert)
    "markitdown/SPARSE-2024-INV-1234_borderless_table.pdf": Expect(
        contains=[
            "Report ID: SPARSE-2024-INV-1234",
            "Total Variance Cost: $4,287.50",
            "The inventory reconciliation reveals several key findings.",
            "SKU-4563",
        ]
    ),
    "mammoth/tables.docx": Expect(
        contains=[
            "Above\n| Top left | Top right |\n| --- | --- |\n| Bottom left | Bottom right |\nBelow"
        ]
    ),
    "mammoth/footnotes.docx": Expect(contains=["Ouch", "A tachyon walks into a bar.", "Fin."]),
    "mammoth/endnotes.docx": Expect(contains=["Ouch", "A tachyon walks into a bar.", "Fin."]),
    "mammoth/footnote-hyperlink.docx": Expect(contains=["Example"]),
    "mammoth/comments.docx": Expect(contains=["Ouch"]),
    "mammoth/text-box.docx": Expect(contains=["Datum plane"]),
    "mammoth/simple-list.docx": Expect(contains=["- Apple\n- Banana"]),
    "mammoth/single-paragraph.docx": Expect(contains=["Walking on imported air"]),
    "mammoth/embedded-style-map.docx": Expect(contains=["# Walking on imported air"]),
    "mammoth/strikethrough.docx": Expect(contains=["Today's Special: Salmon Sold out"]),
    "mammoth/underline.docx": Expect(contains=["The Sunset Tree"]),
    "mammoth/tiny-picture.docx": Expect(outcome="empty_document"),
    "mammoth/external-picture.docx": Expect(outcome="empty_document"),
    "mammoth/tiny-picture.png": Expect(outcome="unsupported_format"),
    "mammoth/strict-format.docx": Expect(contains=["Test"]),
    "mammoth/utf8-bom.docx": Expect(contains=["This XML has a byte order mark."]),
    "mammoth/empty.docx": Expect(outcome="empty_document"),
    "msoffcrypto-tool/example_password.docx": Expect(outcome="encrypted_file"),
    "msoffcrypto-tool/example_password.xlsx": Expect(outcome="encrypted_file"),
    "msoffcrypto-tool/ecma376standard_password.docx": Expect(outcome="encrypted_file"),
}
UNCHECKED = {
    "python-docx/blk-paras-and-tables.docx": "header/footer tables: headers, footers left out",
    "python-docx/hdr-header-footer.docx": "header/footer texts: left out by design",
    "python-docx/comments-rich-para.docx": "comment author/date/image: comments left out",
    "python-docx/par-hyperlinks.docx": "hyperlink address: links keep their text only",
    "python-pptx/shp-access-ole-object.pptx": "OLE prog id/blob: embedded objects not read",
    "openpyxl/comments.xlsx": "cell comments: read-only mode does not read them",
    "openpyxl/formulae.xlsx": "formula text ('=A2+A3'): cached values are read instead",
    "openpyxl/bug304.xlsx": "part names: an object-model detail",
    "openpyxl/date_1904.xlsx": "the base date: an object-model detail",
    "openpyxl/guess_types.xlsx": "a load option's typing",
    "markitdown/test_with_comment.docx": "comment texts: comments left out",
    "mammoth/comments.docx": "comment texts: comments left out",
    "mammoth/footnote-hyperlink.docx": "the link's href: links keep their text only",
}


def outcome_of(name: str, data: bytes) -> tuple[str, int]:
    """(code or "ok", locations) of one formats.convert call."""
    try:
        document = convert(name, data)
    except ConversionError as exc:
        return exc.code, 0
    return "ok", len(document.pages)


def seen_texts(entry: dict) -> list[str]:
    observed = entry.get("observed", {})
    texts = [t.strip() for t in observed.get("first_text", []) if t.strip()]
    texts += [t for t in observed.get("notes_text", []) if t]
    texts += [c for c in observed.get("table0_row0", []) if c]
    return [" ".join(t.split()) for t in texts]


def files() -> list[tuple[str, dict, bytes]]:
    manifest = json.loads((DATA / "manifest.json").read_text())
    out = [(e["file"], e, (DATA / e["file"]).read_bytes()) for e in manifest]
    random = (DATA / "markitdown/random.bin").read_bytes()
    out.append(("markitdown/random.bin as .pptx", {"type": "pptx"}, random))
    return out


def file_name_of(name: str) -> str:
    """The name a file is ingested under ("random.bin as .pptx" is random.pptx)."""
    return name.replace(".bin as .pptx", ".pptx")


def cli(*argv: str) -> str:
    """What one `docchat` command run in this process prints on stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        docchat(list(argv))
    return out.getvalue()


def ingest_table(folder: Path, data: Path) -> None:
    """`docchat ingest` of every file, named one by one (a folder ingest would pass over the
    types docchat does not read, which must fail with their reason here), then `docchat
    status --json` for each outcome and `docchat text --json` for each indexed text."""
    Path("/tmp/test_rlink.txt").write_text(RLINK_SECRET)  # rlink.docx's target: must not be read
    placed = {}
    for name, _, payload in files():
        path = folder / file_name_of(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
        placed[name] = path
    cli("ingest", *map(str, placed.values()), "--data-dir", str(data))
    status = json.loads(cli("status", "--json", "--data-dir", str(data)))
    records = {r["source"]: r for r in status["documents"]}
    print(
        "| file | outcome (`docchat status`) | expected | suite texts in `docchat text` | "
        "seen texts | locations |"
    )
    print("|---|---|---|---|---|---|")
    totals: dict[str, int] = defaultdict(int)
    for name, entry, _ in files():
        record = records.get(source_of(placed[name]))
        if record is None:
            outcome = "not in the index"
        elif record["status"] == "INDEXED":
            outcome = "ok"
        else:
            outcome = record["error_code"] or record["status"]
        text = ""
        if outcome == "ok":
            pages = json.loads(cli("text", str(placed[name]), "--json", "--data-dir", str(data)))
            text = "\n".join(page["text"] for page in pages)
        expect = EXPECT.get(name, Expect())
        found = sum(s in text for s in expect.contains) + sum(s not in text for s in expect.absent)
        wanted = len(expect.contains) + len(expect.absent)
        seen = seen_texts(entry) if outcome == "ok" else []
        flat = " ".join(text.split())
        seen_found = sum(" ".join(s.split()) in flat for s in seen)
        suite = f"{found}/{wanted}" if wanted else ("—" if name not in UNCHECKED else "n/a")
        mark = "" if outcome == expect.outcome else " ✗"
        if wanted and found < wanted:
            suite += " ✗"
        totals["files"] += 1
        totals["as expected"] += outcome == expect.outcome
        totals["indexed"] += outcome == "ok"
        totals["texts"] += wanted
        totals["texts found"] += found
        totals["seen"] += len(seen)
        totals["seen found"] += seen_found
        pages_indexed = record["pages"] if record and outcome == "ok" else ""
        print(
            f"| {name} | {outcome}{mark} | {expect.outcome} | {suite} | "
            f"{f'{seen_found}/{len(seen)}' if seen else '—'} | {pages_indexed} |"
        )
    print(
        f"\n{totals['as expected']}/{totals['files']} outcomes as expected ({totals['indexed']} "
        f"indexed, the others failed with their reason); suite texts in `docchat text` "
        f"{totals['texts found']}/{totals['texts']}; seen texts {totals['seen found']}/"
        f"{totals['seen']}."
    )
    print(
        "Unchecked suite assertions (no text to look for): "
        + "; ".join(f"{Path(k).name}: {v}" for k, v in UNCHECKED.items())
    )


def converted() -> list[tuple[str, str, bytes, int]]:
    """(name, type, bytes, locations) of each file formats.convert reads, for the speed table."""
    out = []
    for name, entry, data in files():
        outcome, count = outcome_of(file_name_of(name), data)
        if outcome == "ok":
            out.append((name, entry.get("type", ""), data, count))
    return out


# --- speed ---------------------------------------------------------------------------------------


def raw_docx(data: bytes) -> str:
    """A plain python-docx read: the body's paragraphs and every table cell's text (issue 44
    measured Word against this read; mammoth.extract_raw_text, the baseline before, is itself
    4-7x slower than it)."""
    import docx
    import mammoth

    try:
        document = docx.Document(io.BytesIO(data))
    except KeyError:  # Strict OOXML (mammoth/strict-format.docx): python-docx cannot open it
        return str(mammoth.extract_raw_text(io.BytesIO(data)).value)
    texts = [p.text for p in document.paragraphs]
    texts += [cell.text for table in document.tables for row in table.rows for cell in row.cells]
    return "\n".join(texts)


def raw_pptx(data: bytes) -> str:
    """Every text python-pptx exposes as text: shapes' text frames, table cells, notes (the
    same content as ours, less charts and alt text, which python-pptx does not call text)."""
    import pptx

    deck = pptx.Presentation(io.BytesIO(data))
    texts = []
    for slide in deck.slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                texts.append(shape.text_frame.text)
            elif getattr(shape, "has_table", False) and shape.has_table:
                texts += [cell.text for row in shape.table.rows for cell in row.cells]
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            texts.append(slide.notes_slide.notes_text_frame.text)
    return "\n".join(texts)


def raw_xlsx(data: bytes) -> str:
    import openpyxl

    with warnings.catch_warnings():  # "Unknown extension is not supported", as in sheets.py
        warnings.simplefilter("ignore", UserWarning)
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        text = "\n".join(
            " ".join(str(v) for v in row if v is not None)
            for sheet in book.worksheets
            for row in sheet.iter_rows(values_only=True)
        )
    book.close()
    return text


def raw_html(data: bytes) -> str:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(decoded("x.html", data, DEFAULT_LIMITS, markup=True))
    return tree.body.text() if tree.body is not None else ""


def raw_text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


RAW: dict[str, tuple[str, Callable[[bytes], str]]] = {
    "docx": ("python-docx paragraphs and table cells", raw_docx),
    "pptx": ("python-pptx text frames, tables, notes", raw_pptx),
    "xlsx": ("openpyxl read-only values", raw_xlsx),
    "html": ("selectolax body.text()", raw_html),
    "md": ("bytes.decode", raw_text),
}


def interleaved(work: list[Callable[[], object]], repeats: int) -> list[float]:
    """Each callable's best time over `repeats` rounds, the callables taking turns in every
    round: on a shared machine a burst of load then slows all of them, not one."""
    best = [float("inf")] * len(work)
    for _ in range(repeats):
        for i, fn in enumerate(work):
            started = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - started)
    return best


def generated() -> list[tuple[str, str, bytes, int]]:
    made = [
        (
            "generated: 40 chapters docx",
            "docx",
            samples.docx_file(sections=40, paragraphs=6, table_rows=8),
        ),
        (
            "generated: 600-table docx",
            "docx",
            samples.docx_file(sections=600, paragraphs=2, table_rows=6),
        ),
        ("generated: 120-slide pptx", "pptx", samples.pptx_file(slides=120)),
        (
            "generated: 3 x 20,000-row xlsx",
            "xlsx",
            samples.xlsx_file(rows=20_000, sheets=("North", "South", "West")),
        ),
        ("generated: 16,384 x 21 xlsx", "xlsx", samples.wide_xlsx(columns=16_384, rows=21)),
        ("generated: 200-part html", "html", samples.html_page(sections=200)),
    ]
    out = []
    for name, kind, data in made:
        ext = {"docx": ".docx", "pptx": ".pptx", "xlsx": ".xlsx", "html": ".html"}[kind]
        count = len(convert(f"g{ext}", data).pages)
        out.append((name, kind, data, count))
    return out


def speed_table(converted: list[tuple[str, str, bytes, int]], title: str, repeats: int) -> None:
    per_kind: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])
    for _, kind, data, count in converted:
        if kind not in RAW:
            continue
        ours, raw, checks = interleaved(
            [
                partial(convert, f"x.{kind}", data),
                partial(RAW[kind][1], data),
                partial(open_package, f"x.{kind}", data, kind, DEFAULT_LIMITS)
                if kind in ("docx", "pptx", "xlsx")
                else partial(str),
            ],
            repeats,
        )
        row = per_kind[kind]
        row[0] += 1
        row[1] += count
        row[2] += ours
        row[3] += raw
        row[4] += checks
    print(f"\n{title} (best of {repeats} per file)\n")
    print(
        "| format | files | locations | ours loc/s | raw loc/s | ratio raw/ours | safety checks "
        "share | raw baseline |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind, (n, count, ours, raw, checks) in per_kind.items():
        ratio = raw / ours if ours else 0.0
        verdict = "n/a (no library)" if kind == "md" else ("ok" if ratio >= 0.5 else "BELOW 0.5")
        print(
            f"| {kind} | {n:.0f} | {count:.0f} | {count / ours:,.0f} | {count / raw:,.0f} | "
            f"{ratio:.2f} {verdict} | {checks / ours:.0%} | {RAW[kind][0]} |"
        )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="office-bench-") as tmp:
        ingest_table(Path(tmp, "files"), Path(tmp, "data"))
    speed_table(converted(), "Speed of formats.convert on the suite files", repeats=5)
    made = generated()
    speed_table(made, "Speed on generated larger files", repeats=5)
    memory_table(made)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"\n(python {sys.version.split()[0]}; each time is a best-of, ours and raw taking turns; "
        f"2 shared cores, load average {' '.join(load)})"
    )


if __name__ == "__main__":
    main()
