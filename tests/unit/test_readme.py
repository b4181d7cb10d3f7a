"""The README documents every setting and shows the benchmark tables the scripts print."""

from __future__ import annotations

from docchat.config import Settings
from tests.conftest import REPO


def test_readme_documents_every_setting() -> None:
    readme = (REPO / "README.md").read_text()

    missing = [n for n in Settings.model_fields if f"`DOCCHAT_{n.upper()}`" not in readme]

    assert missing == []


def test_readme_settings_table_is_the_one_the_settings_model_makes() -> None:
    from bench.readme_tables import with_settings_table

    readme = (REPO / "README.md").read_text()

    assert with_settings_table(readme) == readme, (
        "the README's settings table is out of date: run .venv/bin/python bench/readme_tables.py"
    )
