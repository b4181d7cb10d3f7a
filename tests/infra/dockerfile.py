"""Read functions/ocr/Dockerfile the way the tests need it: base image, pip commands, copies,
command. Only the instructions that file uses (FROM, COPY, RUN, CMD) are understood."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Dockerfile:
    base: str = ""
    pip_installs: list[list[str]] = field(default_factory=list)  # each RUN pip install's args
    copies: list[tuple[list[str], str]] = field(default_factory=list)  # (sources, destination)
    cmd: list[str] = field(default_factory=list)
    other_runs: list[str] = field(default_factory=list)

    def requirement_files(self) -> list[str]:
        """The `-r` files of the pip installs, in order."""
        return [args[i + 1] for args in self.pip_installs for i, a in enumerate(args) if a == "-r"]


def parse(path: Path) -> Dockerfile:
    found = Dockerfile()
    for instruction in _instructions(path.read_text()):
        keyword, _, rest = instruction.partition(" ")
        match keyword.upper():
            case "FROM":
                found.base = rest.strip()
            case "COPY":
                *sources, destination = shlex.split(rest)
                found.copies.append((sources, destination))
            case "RUN":
                words = shlex.split(rest)
                if words[:2] == ["pip", "install"] and "&&" not in words:
                    found.pip_installs.append(words[2:])
                else:
                    found.other_runs.append(rest)
            case "CMD":
                found.cmd = json.loads(rest)
            case _:
                raise AssertionError(
                    f"{path}: {keyword} is not understood by tests/infra/dockerfile"
                )
    return found


def _instructions(text: str) -> list[str]:
    joined, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        joined.append(current + line.strip())
        current = ""
    return joined
