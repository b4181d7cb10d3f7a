"""Reading a question set or corpus of JSON lines (FinanceBench's JSONL, BEIR's corpus and
queries, `docchat feedback export`'s ratings) one way: a file that cannot be read, is not UTF-8,
or has a line that is not what the set holds is an EvaluationDataError naming the file, the
line and what was wrong, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from docchat.errors import EvaluationDataError

_M = TypeVar("_M", bound=BaseModel)


def read_text(path: Path) -> str:
    """The file's text, or EvaluationDataError saying why it cannot be read."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        said = exc.strerror or exc
        raise EvaluationDataError(f"cannot read {path} ({said}): check the path") from exc
    except UnicodeDecodeError as exc:
        raise EvaluationDataError(f"{path} is not UTF-8 text ({exc.reason})") from exc


def json_lines(path: Path, model: type[_M], *, what: str, text: str | None = None) -> list[_M]:
    """Each non-blank line of `path` (or of `text`, read from it) as `model`; a line that is
    not one is an EvaluationDataError saying it is not `what`, and the first problem."""
    found = []
    lines = (read_text(path) if text is None else text).splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            found.append(model.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise EvaluationDataError(
                f"{path}, line {number}, is not {what} ({first_problem(exc)})"
            ) from exc
    return found


def first_problem(exc: json.JSONDecodeError | ValidationError) -> str:
    """What a reader fixes first: JSON's complaint, or the first field that did not fit."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg}"
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "the line"
    return f"{where}: {first['msg']}"
