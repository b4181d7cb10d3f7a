"""The docs document every setting and show the benchmark tables the scripts print.

The settings table and the AWS text moved from the README to docs/configuration.md and
docs/aws.md; these tests read them there.
"""

from __future__ import annotations

from docchat.config import Settings
from tests.conftest import REPO

CONFIGURATION = REPO / "docs" / "configuration.md"
AWS = REPO / "docs" / "aws.md"


def test_readme_documents_every_setting() -> None:
    readme = CONFIGURATION.read_text()

    missing = [n for n in Settings.model_fields if f"`DOCCHAT_{n.upper()}`" not in readme]

    assert missing == []


def test_readme_settings_table_is_the_one_the_settings_model_makes() -> None:
    from bench.readme_tables import with_settings_table

    readme = CONFIGURATION.read_text()

    assert "<!-- settings-table:start -->" in readme
    assert with_settings_table(readme) == readme, (
        "docs/configuration.md's settings table is out of date: run bench/readme_tables.py"
    )


def test_readme_processes_table_is_the_one_the_views_make() -> None:
    from bench.readme_tables import with_processes_table

    readme = CONFIGURATION.read_text()

    assert "<!-- processes-table:start -->" in readme
    assert "| chunk function | `ChunkSettings` |" in readme
    assert with_processes_table(readme) == readme, (
        "docs/configuration.md's table of who reads which settings is out of date: run "
        "bench/readme_tables.py"
    )


def test_readme_on_aws_says_which_regions_have_every_default() -> None:
    on_aws = AWS.read_text()
    regions = on_aws.split("\n## Regions\n", 1)[1].split("\n## ", 1)[0]

    for needed in (
        "ap-northeast-1, ca-central-1,\n  eu-central-1, us-east-1 and us-west-2",
        "CollectionGeneration=CLASSIC",
        "`global.` profile",
        "QEMU's binfmt",
    ):
        assert needed in regions, needed
