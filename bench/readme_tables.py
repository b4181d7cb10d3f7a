"""The configuration table of docs/configuration.md, made from the settings model (one source
of truth).

.venv/bin/python bench/readme_tables.py     rewrites the table between the page's
                                            settings-table markers
"""

from __future__ import annotations

import re
from pathlib import Path

from docchat.config import Settings

CONFIGURATION = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
_BLOCK = re.compile(r"(<!-- settings-table:start -->\n).*?(<!-- settings-table:end -->)", re.S)


def settings_table() -> str:
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = "(empty)" if field.default == "" else field.default
        rows.append(f"| `DOCCHAT_{name.upper()}` | `{default}` | {field.description} |")
    return "\n".join(rows) + "\n"


def with_settings_table(readme: str) -> str:
    """`readme` with its settings table replaced by the current one."""
    return _BLOCK.sub(lambda m: m[1] + settings_table() + m[2], readme, count=1)


def main() -> None:
    text = CONFIGURATION.read_text()
    CONFIGURATION.write_text(with_settings_table(text))


if __name__ == "__main__":
    main()
