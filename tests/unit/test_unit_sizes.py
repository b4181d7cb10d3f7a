"""No unit of the package too big to hold in one's head (issue 26): a module of at most about 500
lines, a function of at most about 80."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import docchat

PACKAGE = Path(docchat.__file__).parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


@cache
def _modules() -> dict[Path, str]:
    return {path: path.read_text(encoding="utf-8") for path in sorted(PACKAGE.rglob("*.py"))}


def test_unit_sizes_no_module_is_over_500_lines() -> None:
    # Given every module of the package
    modules = _modules()

    # Then none is longer than the limit
    assert len(modules) > 50
    too_long = {
        str(path.relative_to(PACKAGE)): lines
        for path, text in modules.items()
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}


def test_unit_sizes_no_function_is_over_80_lines() -> None:
    # Given every function and method of the package, nested ones included
    too_long = {}
    for path, text in _modules().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long[f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"] = lines

    # Then none is longer than the limit
    assert too_long == {}
