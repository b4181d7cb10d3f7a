"""Print the README's configuration table from the settings model (one source of truth).

.venv/bin/python bench/readme_tables.py > /tmp/settings.md
"""

from __future__ import annotations

from docchat.config import Settings


def main() -> None:
    print("| variable | default | meaning |")
    print("|---|---|---|")
    for name, field in Settings.model_fields.items():
        default = "(empty)" if field.default == "" else field.default
        print(f"| `DOCCHAT_{name.upper()}` | `{default}` | {field.description} |")


if __name__ == "__main__":
    main()
