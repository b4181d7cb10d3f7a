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


def test_readme_on_aws_says_which_regions_have_every_default() -> None:
    readme = (REPO / "README.md").read_text()
    on_aws = readme.split("\n## On AWS\n", 1)[1].split("\n## ", 1)[0]
    regions = on_aws.split("\n### Regions\n", 1)[1].split("\n### ", 1)[0]

    for needed in (
        "ap-northeast-1, ca-central-1,\n  eu-central-1, us-east-1 and us-west-2",
        "CollectionGeneration=CLASSIC",
        "`global.` profile",
        "QEMU's binfmt",
    ):
        assert needed in regions, needed
