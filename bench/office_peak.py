"""Peak RSS of formats.convert on bench/office.py's generated files (issue 44: a 16,384-column
sheet was said to peak at 1.41 GiB), each file converted in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

# VmHWM (the process's own RSS high-water mark), not getrusage's ru_maxrss: Linux carries
# ru_maxrss over exec, so a child of a large bench process would report the bench's size.
_PEAK = """
import sys
from docchat.ingest.formats import convert
def hwm():
    with open("/proc/self/status") as status:
        return next(int(x.split()[1]) // 1024 for x in status if x.startswith("VmHWM"))
data = open(sys.argv[1], "rb").read()
base = hwm()
convert(sys.argv[2], data)
print(base, hwm())
"""


def memory_table(made: list[tuple[str, str, bytes, int]]) -> None:
    """Peak RSS of one formats.convert of each generated file, each in a fresh interpreter (as
    ingest converts in a child process), and what the interpreter held before converting."""
    print("\nPeak memory of formats.convert, one fresh process per file\n")
    print("| file | size | locations | RSS at start | peak RSS |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="office-peak-") as tmp:
        for name, kind, data, count in made:
            path = Path(tmp, f"file.{kind}")
            path.write_bytes(data)
            out = subprocess.run(
                [sys.executable, "-c", _PEAK, str(path), path.name],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            print(f"| {name} | {len(data) / 1e6:.1f} MB | {count} | {out[0]} MiB | {out[1]} MiB |")
