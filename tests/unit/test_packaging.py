"""pyproject.toml as today's setuptools reads it without a warning (issue 44): installing
printed setuptools' boxed `project.license` deprecation three times, for the table form."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import REPO


def test_packaging_license_is_an_spdx_expression_setuptools_reads() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    project, build = pyproject["project"], pyproject["build-system"]

    # A string (PEP 639), not the deprecated {text = ...} table, and no License classifier
    # beside it (setuptools refuses both together)
    assert project["license"] == "Apache-2.0"
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]
    # setuptools reads the string form from 77.0 on
    [setuptools] = [r for r in build["requires"] if r.startswith("setuptools")]
    minimum = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", setuptools)
    assert minimum is not None and int(minimum.group(1)) >= 77, setuptools
