"""The configuration tables of docs/configuration.md, made from the settings model and the
processes' views of it (one source of truth).

.venv/bin/python bench/readme_tables.py     rewrites the tables between the page's
                                            settings-table and processes-table markers
"""

from __future__ import annotations

import re
from pathlib import Path

from docchat.config import PREFIX, Settings
from docchat.processes import FUNCTIONS

CONFIGURATION = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}-table:start -->\n).*?(<!-- {name}-table:end -->)", re.S)


def settings_table() -> str:
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = "(empty)" if field.default == "" else field.default
        rows.append(f"| `DOCCHAT_{name.upper()}` | `{default}` | {field.description} |")
    return "\n".join(rows) + "\n"


def _variables(names: list[str]) -> str:
    return ", ".join(f"`{PREFIX}{n.upper()}`" for n in names) or "—"


def processes_table() -> str:
    """Which process reads which settings: each function's view (docchat/processes.py), the
    variables it cannot run without, and those it reads at their defaults when unset."""
    rows = [
        "| process | settings (docchat/processes.py) | cannot run without | also reads |",
        "|---|---|---|---|",
    ]
    for function, view in FUNCTIONS.items():
        required = view.required()
        order = list(Settings.model_fields)
        rest = sorted(set(view.model_fields) - set(required), key=order.index)
        required.sort(key=order.index)
        rows.append(
            f"| {function} function | `{view.__name__}` | {_variables(required)} "
            f"| {_variables(rest)} |"
        )
    rows.append("| `docchat` (the CLI, `docchat serve`) | `Settings` | — | every setting |")
    return "\n".join(rows) + "\n"


def with_settings_table(readme: str) -> str:
    """`readme` with its settings table replaced by the current one."""
    return _block("settings").sub(lambda m: m[1] + settings_table() + m[2], readme, count=1)


def with_processes_table(readme: str) -> str:
    """`readme` with its table of who reads which settings replaced by the current one."""
    return _block("processes").sub(lambda m: m[1] + processes_table() + m[2], readme, count=1)


def main() -> None:
    text = CONFIGURATION.read_text()
    CONFIGURATION.write_text(with_processes_table(with_settings_table(text)))


if __name__ == "__main__":
    main()
