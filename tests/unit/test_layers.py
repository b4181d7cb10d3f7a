"""The library's layers (its packages as docs/architecture.md lays them out), checked on its
source with `ast`: no lower layer imports a higher one, whether the import is at module level,
inside a function, under `if TYPE_CHECKING:` or an `importlib.import_module("docchat....")`
call. A violation is named `module -> imported`.

- The top level (ports, models, config, errors, payloads, llm, limits, vectors, modelfiles and
  any module added beside them) holds the contracts: it imports only the top level.
- `search` and `ingest` are the domain below the answer: each imports the top level and itself,
  never the other.
- `answer`, `serve`, `wiring`, `adapters`, `cli`, `evaluate` and `web` are above: they may import
  anything.

A package added to docchat must be placed in one of these before this test passes.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

LIBRARY = REPO / "layers" / "docchat" / "docchat"
PACKAGE = "docchat"
TOP = ""  # the layer of the top-level modules
LOWER = frozenset({"search", "ingest"})
HIGHER = frozenset({"answer", "serve", "wiring", "adapters", "cli", "evaluate", "web", "sources"})
_ABOVE = 2
_RANK = {TOP: 0, **dict.fromkeys(LOWER, 1), **dict.fromkeys(HIGHER, _ABOVE)}


def layer(module: str) -> str:
    """The layer of a dotted docchat module: its package under docchat, TOP for a top-level
    module (or docchat itself)."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in _RANK:
        return TOP
    return parts[1]


def may_import(importer: str, imported: str) -> bool:
    mine, theirs = layer(importer), layer(imported)
    if mine == theirs:
        return True
    return _RANK[theirs] < _RANK[mine] or _RANK[mine] == _ABOVE


def imported_modules(module: str, source: str, *, is_package: bool = False) -> Iterator[str]:
    """Every docchat module `source` (the text of `module`) imports, wherever in the file."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if base == PACKAGE:
                # `from docchat import search`: the names are the modules
                yield from (f"{PACKAGE}.{alias.name}" for alias in node.names)
            else:
                yield base
        elif (
            isinstance(node, ast.Call)
            and _called(node.func) in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value


def _called(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def violations_in(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """`module -> imported` for each import of `source` that crosses the layers the wrong way."""
    found = []
    for imported in imported_modules(module, source, is_package=is_package):
        if imported.split(".")[0] == PACKAGE and not may_import(module, imported):
            found.append(f"{module} -> {imported}")
    return sorted(set(found))


def modules(root: Path) -> Iterator[tuple[str, Path, bool]]:
    """(dotted name, file, whether it is a package's __init__) of every module under `root`."""
    for path in sorted(root.rglob("*.py")):
        parts = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        yield ".".join(parts), path, is_package


def violations(root: Path) -> list[str]:
    found: list[str] = []
    for module, path, is_package in modules(root):
        found += violations_in(module, path.read_text(), is_package=is_package)
    return found


def _report(found: list[str]) -> str:
    return "imports that cross the layers upward or sideways:\n" + "\n".join(found)


def test_no_lower_layer_imports_a_higher_one() -> None:
    found = violations(LIBRARY)
    assert not found, _report(found)


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in LIBRARY.iterdir() if p.is_dir() and p.name != "__pycache__"}
    unplaced = sorted(packages - LOWER - HIGHER)
    assert not unplaced, f"place these packages in LOWER or HIGHER of this test: {unplaced}"


def test_the_scan_sees_the_whole_library() -> None:
    names = {module for module, _, _ in modules(LIBRARY)}
    assert {"docchat", "docchat.ports", "docchat.search.library", "docchat.ingest.stages"} <= names
    assert len(names) > 100


# --- the checker bites ----------------------------------------------------------------------

BAD = [
    # (the importing module, its source, the violation the checker must name)
    (
        "docchat.ports",
        "from docchat.answer.conversations import LOCAL_USER\n",
        "answer.conversations",
    ),
    ("docchat.models", "import docchat.search.hybrid\n", "search.hybrid"),
    (
        "docchat.search.rerank",
        "def f():\n    from docchat.adapters.embedding import unit_rows\n",
        "adapters.embedding",
    ),
    (
        "docchat.search.library",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from docchat.ingest.pagetext import page_text\n",
        "ingest.pagetext",
    ),
    ("docchat.ingest.stages", "from docchat import search\n", "search"),
    ("docchat.ingest.ocr", "from ..adapters import local_embedder\n", "adapters"),
    (
        "docchat.ingest.convert.pdf",
        "import importlib\nmod = importlib.import_module('docchat.serve.app')\n",
        "serve.app",
    ),
]


@pytest.mark.parametrize(("module", "source", "imported"), BAD)
def test_the_checker_names_a_bad_import(module: str, source: str, imported: str) -> None:
    assert violations_in(module, source) == [f"{module} -> docchat.{imported}"]


GOOD = [
    ("docchat.vectors", "from docchat.ports import Vectors\n"),
    ("docchat.search.library", "from docchat.models import DocumentRecord\nimport numpy\n"),
    ("docchat.ingest.stages", "def f():\n    from docchat.ingest.chunk import chunk_pages\n"),
    ("docchat.serve.state", "from docchat.adapters.local_files import LocalFiles\n"),
    ("docchat.adapters.sqlite_conversations", "from docchat.answer import conversations\n"),
    ("docchat.search.hybrid", "from . import terms\nfrom .. import errors\n"),
]


@pytest.mark.parametrize(("module", "source"), GOOD)
def test_the_checker_lets_an_allowed_import_pass(module: str, source: str) -> None:
    assert violations_in(module, source) == []


def test_the_checker_resolves_a_package_s_relative_imports_from_the_package() -> None:
    # In search/__init__.py `.` is docchat.search itself, `..` docchat.
    source = "from . import hybrid\nfrom ..answer import agent\n"
    assert list(imported_modules("docchat.search", source, is_package=True)) == [
        "docchat.search",
        "docchat.answer",
    ]
    assert violations_in("docchat.search", source, is_package=True) == [
        "docchat.search -> docchat.answer"
    ]


def test_a_bad_import_added_to_a_copy_of_the_library_fails_the_check(tmp_path: Path) -> None:
    copy = tmp_path / "docchat"
    shutil.copytree(LIBRARY, copy, ignore=shutil.ignore_patterns("__pycache__", "web"))
    with (copy / "search" / "library.py").open("a") as file:
        file.write("\n\ndef _late():\n    from docchat.serve.access import Access\n")
    with (copy / "ports.py").open("a") as file:
        file.write(
            "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import docchat.ingest\n"
        )

    found = violations(copy)

    assert found == [
        "docchat.ports -> docchat.ingest",
        "docchat.search.library -> docchat.serve.access",
    ]
    assert "docchat.search.library -> docchat.serve.access" in _report(found)
