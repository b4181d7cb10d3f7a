"""Every real PDF in ../shared/data/pdfs and a set of hostile files through docchat's isolated
converter: how many convert, fail with a typed reason, or crash; the slowest file; peak memory.

    .venv/bin/python bench/reliability.py [PDF_DIR]
"""

from __future__ import annotations

import re
import resource
import sys
import time
from collections import Counter
from pathlib import Path

from docchat.convert import ConvertLimits
from docchat.errors import ConversionError
from docchat.isolate import pages_from_pdf_isolated

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "pdfs"
LIMITS = ConvertLimits(max_pages=5000, timeout_s=60)


def hostile_cases(sample: bytes) -> dict[str, bytes]:
    """Damaged and hostile variants of a real PDF, plus files that are not PDFs at all."""
    return {
        "zero bytes": b"",
        "text named .pdf": b"Not a PDF at all.\n" * 200,
        "header only": b"%PDF-1.7\n",
        **{f"truncated to {p}%": sample[: len(sample) * p // 100] for p in (5, 25, 50, 75, 95)},
        "broken xref": re.sub(rb"startxref\s+\d+", b"startxref\n99999999", sample),
        "bytes zeroed mid-file": sample[: len(sample) // 2]
        + bytes(4096)
        + sample[len(sample) // 2 + 4096 :],
        "garbage tail": sample + b"\x00\xff" * 50_000,
    }


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED
    if not folder.is_dir():
        print(f"no PDFs at {folder}: pass a folder of PDFs")
        return 1
    files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.pdf"))}
    sample = (ROOT / "examples" / "pdfs" / "dmca.pdf").read_bytes()
    cases = {**files, **{f"hostile: {k}": v for k, v in hostile_cases(sample).items()}}
    outcomes: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    slowest = (0.0, "")
    for name, data in cases.items():
        started = time.monotonic()
        try:
            pages_from_pdf_isolated(data, limits=LIMITS)
            outcomes["converted"] += 1
        except ConversionError as exc:
            outcomes["typed error"] += 1
            reasons[exc.code] += 1
        except Exception as exc:  # anything untyped is what this script exists to find
            outcomes["crash"] += 1
            print(f"CRASH {name}: {type(exc).__name__}: {exc}")
        slowest = max(slowest, (time.monotonic() - started, name))
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{'files tried':<28}{len(cases)} ({len(files)} real, {len(cases) - len(files)} hostile)")
    print(f"{'converted':<28}{outcomes['converted']}")
    print(
        f"{'typed errors':<28}{outcomes['typed error']} "
        f"({', '.join(f'{k} {v}' for k, v in reasons.most_common())})"
    )
    print(f"{'crashes':<28}{outcomes['crash']}")
    print(f"{'slowest file':<28}{slowest[0]:.2f} s ({slowest[1]})")
    print(f"{'peak memory (one child)':<28}{peak_mib:.0f} MiB")
    return 1 if outcomes["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
