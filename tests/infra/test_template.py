"""template.yaml passes cfn-lint (with the SAM transform) and ships the docchat layer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_template_passes_cfn_lint() -> None:
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    result = subprocess.run(
        [str(cfn_lint), str(REPO / "template.yaml")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_layer_content_has_package_at_root_and_requirements() -> None:
    # layers/docchat/Makefile copies docchat/ from the ContentUri root into the layer's python/
    # and installs both requirement files (the second without dependencies).
    layer = REPO / "layers" / "docchat"
    assert (layer / "docchat" / "__init__.py").is_file()
    requirements = (layer / "requirements.txt").read_text()
    requirements += (layer / "requirements-nodeps.txt").read_text()
    for package in ("pypdfium2", "langchain-text-splitters", "numpy"):
        assert package in requirements
