"""Pages per second of docchat's PDF converter against raw pypdfium2 text extraction.

Run from the repository root:

    .venv/bin/python bench/convert.py              # Debian's R and C++ manuals (~3,500 pages)
    .venv/bin/python bench/convert.py FILE.pdf ... # your own PDFs

Without arguments the manuals are fetched once with `apt-get download` and unpacked with
`dpkg -x` into bench/.data/ (gitignored). Each side is timed on the same bytes in the same run,
alternately, in CPU seconds of this process (steadier than wall time on a shared
machine), best of 3 (`--runs N` to change). Budget: docchat keeps at least half the raw speed
(ratio >= 0.5) on every file; the script exits 1 when it does not.
"""

from __future__ import annotations

import argparse
import gc
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pypdfium2 as pdfium

from docchat.ingest.convert.pdf import ConvertLimits, pages_from_pdf

DATA = Path(__file__).resolve().parent / ".data"
PACKAGES = ("r-doc-pdf", "c++-annotations-pdf")
MANUALS = (
    "usr/share/R/doc/manual/fullrefman.pdf",  # R reference manual, 2,415 pages
    "usr/share/doc/c++-annotations/cplusplus.pdf",  # C++ Annotations, 1,151 pages
)
BUDGET = 0.5
LIMITS = ConvertLimits(max_pages=100_000, timeout_s=3600)


def debian_manuals() -> list[Path]:
    """The manuals under bench/.data/root, downloaded and unpacked first if missing."""
    root = DATA / "root"
    paths = [root / name for name in MANUALS]
    if all(path.is_file() for path in paths):
        return paths
    if not (shutil.which("apt-get") and shutil.which("dpkg")):
        sys.exit(
            "apt-get/dpkg not found: cannot fetch Debian's manuals "
            f"({', '.join(PACKAGES)}). Pass PDFs instead: "
            ".venv/bin/python bench/convert.py FILE.pdf ..."
        )
    debs = DATA / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    download = ["apt-get", "download", *PACKAGES]
    if subprocess.run(download, cwd=debs).returncode != 0:
        subprocess.run(["apt-get", "update"], check=True)
        subprocess.run(download, cwd=debs, check=True)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
    return paths


def raw_extract(data: bytes) -> int:
    """Plain pypdfium2: the text of every page, nothing else."""
    document = pdfium.PdfDocument(data)
    try:
        count = len(document)
        for index in range(count):
            page = document[index]
            textpage = page.get_textpage()
            textpage.get_text_range()
            textpage.close()
            page.close()
    finally:
        document.close()
    return count


def docchat_convert(data: bytes) -> int:
    return len(pages_from_pdf(data, fallback_title="bench", limits=LIMITS).pages)


def best_times(
    data: bytes, sides: list[Callable[[bytes], int]], runs: int
) -> tuple[int, list[float]]:
    """Best wall time of each side over `runs` rounds, the sides taking turns within a round."""
    best = [float("inf")] * len(sides)
    counts: set[int] = set()
    for _ in range(runs):
        for i, side in enumerate(sides):
            gc.collect()
            start = time.process_time()
            counts.add(side(data))
            best[i] = min(best[i], time.process_time() - start)
    if len(counts) != 1:
        sys.exit(f"the sides disagree on the page count: {sorted(counts)}")
    return counts.pop(), best


def main() -> int:
    parser = argparse.ArgumentParser(description="docchat converter vs raw pypdfium2")
    parser.add_argument("pdfs", nargs="*", type=Path, help="PDFs to time (default: Debian manuals)")
    parser.add_argument("--runs", type=int, default=3, help="rounds per file; best one counts")
    args = parser.parse_args()
    paths: list[Path] = args.pdfs or debian_manuals()

    print(
        f"Python {platform.python_version()}, pypdfium2 {version('pypdfium2')} "
        f"(PDFium {pdfium.PDFIUM_INFO}), CPU time, best of {args.runs}, raw and docchat alternating"
    )
    header = f"{'file':<24} {'pages':>6} {'raw p/s':>9} {'docchat p/s':>12} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    total_pages, total_raw, total_docchat, worst = 0, 0.0, 0.0, float("inf")
    for path in paths:
        data = path.read_bytes()
        pages, (raw_s, docchat_s) = best_times(data, [raw_extract, docchat_convert], args.runs)
        ratio = raw_s / docchat_s
        worst = min(worst, ratio)
        total_pages += pages
        total_raw += raw_s
        total_docchat += docchat_s
        print(
            f"{path.name[:24]:<24} {pages:>6} {pages / raw_s:>9.1f} "
            f"{pages / docchat_s:>12.1f} {ratio:>6.2f}"
        )
    print("-" * len(header))
    print(
        f"{'TOTAL':<24} {total_pages:>6} {total_pages / total_raw:>9.1f} "
        f"{total_pages / total_docchat:>12.1f} {total_raw / total_docchat:>6.2f}"
    )
    passed = worst >= BUDGET
    print(f"{'PASS' if passed else 'FAIL'}: lowest ratio {worst:.2f}, budget >= {BUDGET}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
