"""template.yaml passes `sam validate --lint` and `sam build` makes deployable arm64 artifacts.

aws-sam-cli lives in its own venv (.venv-sam, made by `make install`; its pins clash with ours),
or wherever DOCCHAT_SAM points. `sam build` needs the runtime's Python (3.13) on PATH and
downloads aarch64 wheels from PyPI for the layer.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.infra.test_statemachine import CloudFormationLoader
from tests.infra.zip_template import image_functions, zip_only_copy

RUNTIME = (3, 13)
EM_AARCH64 = 183  # ELF e_machine of AArch64
BUILD_TIMEOUT_S = 300  # about a minute here, wheels downloaded from PyPI


def _sam() -> Path:
    configured = os.environ.get("DOCCHAT_SAM")
    sam = Path(configured) if configured else REPO / ".venv-sam" / "bin" / "sam"
    if not sam.is_file():
        pytest.skip(f"aws-sam-cli not found at {sam}: run `make install` (or set DOCCHAT_SAM)")
    return sam


def _real_python(candidate: str) -> Path | None:
    """The interpreter `candidate` runs, if it is the runtime's version (a shim may not be)."""
    check = f"import sys; print(sys.executable if sys.version_info[:2] == {RUNTIME} else '')"
    try:
        found = subprocess.run(
            [candidate, "-c", check], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    executable = found.stdout.strip()
    return Path(executable) if found.returncode == 0 and executable else None


def _runtime_python() -> Path:
    """A Python 3.13: pyenv's, else python3.13 on PATH; `sam build` runs its pip."""
    candidates: list[str] = []
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run(
            [pyenv, "root"], capture_output=True, text=True, timeout=30, check=False
        ).stdout.strip()
        if root:
            candidates += map(str, sorted(Path(root).glob("versions/3.13*/bin/python3.13")))
    if shutil.which("python3.13"):
        candidates.append("python3.13")
    for candidate in candidates:
        python = _real_python(candidate)
        if python:
            return python
    pytest.skip("no Python 3.13 on this machine (pyenv or python3.13 on PATH): sam build needs it")


def _sam_env(*, path_first: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        SAM_CLI_TELEMETRY="0",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_EC2_METADATA_DISABLED="true",
    )
    if path_first:
        env["PATH"] = os.pathsep.join([str(path_first), env.get("PATH", "")])
    return env


def _output(result: subprocess.CompletedProcess[str]) -> str:
    out, err = result.stdout, result.stderr
    return f"exit {result.returncode}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"


@dataclass
class Build:
    result: subprocess.CompletedProcess[str]
    out: Path

    def succeeded(self) -> Path:
        """The build directory; fails the test with sam's output when the build failed."""
        assert self.result.returncode == 0, f"sam build failed: {_output(self.result)}"
        return self.out

    def template(self) -> dict[str, Any]:
        text = (self.succeeded() / "template.yaml").read_text()
        template: dict[str, Any] = yaml.load(text, Loader=CloudFormationLoader)
        return template


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    sam, python = _sam(), _runtime_python()
    work = tmp_path_factory.mktemp("sam")
    out = work / "build"
    # Without the container-image functions: building those needs Docker (zip_template).
    template = zip_only_copy(REPO / "template.yaml", work / "template.yaml")
    # Run from the temporary folder so nothing (e.g. .aws-sam/) lands in the repository.
    result = subprocess.run(
        [
            str(sam),
            "build",
            "--template-file",
            str(template),
            "--build-dir",
            str(out),
            "--no-cached",
            "--parallel",
            "--region",
            "us-east-1",
        ],
        cwd=work,
        env=_sam_env(path_first=python.parent),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    return Build(result, out)


def _elf_machine(path: Path) -> int:
    with path.open("rb") as binary:
        header = binary.read(20)
    assert header[:4] == b"\x7fELF", f"{path} is not an ELF file"
    return int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")


def _validate(template: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(_sam()),
            "validate",
            "--lint",
            "--template-file",
            str(template),
            "--region",
            "us-east-1",
        ],
        cwd=cwd,
        env=_sam_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_sam_validate_lint_passes(tmp_path: Path) -> None:
    result = _validate(REPO / "template.yaml", tmp_path)
    assert result.returncode == 0, f"sam validate --lint failed: {_output(result)}"
    assert "is a valid SAM Template" in result.stdout + result.stderr, _output(result)


def test_sam_validate_lint_rejects_a_reference_to_a_missing_resource(tmp_path: Path) -> None:
    # Given the template with one !GetAtt naming a resource that does not exist
    template = (REPO / "template.yaml").read_text()
    assert "!GetAtt RegisterFunction.Arn" in template
    broken = tmp_path / "template.yaml"
    broken.write_text(template.replace("!GetAtt RegisterFunction.Arn", "!GetAtt NoSuchFn.Arn", 1))

    # When sam lints it, Then it fails and says why
    result = _validate(broken, tmp_path)
    assert result.returncode != 0, f"sam validate accepted a broken template: {_output(result)}"
    assert "NoSuchFn" in result.stdout + result.stderr, _output(result)


def test_sam_build_succeeds(build: Build) -> None:
    build.succeeded()
    assert "Build Succeeded" in build.result.stdout + build.result.stderr, _output(build.result)


def _layer_python(build: Build) -> Path:
    layer = build.template()["Resources"]["DocchatLayer"]["Properties"]["ContentUri"]
    return build.succeeded() / layer / "python"


def test_sam_build_layer_has_the_docchat_package_at_python_root(build: Build) -> None:
    python = _layer_python(build)
    assert (python / "docchat" / "__init__.py").is_file(), sorted(p.name for p in python.iterdir())
    assert (python / "docchat" / "ingest" / "steps.py").is_file()
    assert not (python / "python").exists(), "the layer nests python/python/: code moved?"


def test_sam_build_binaries_are_aarch64_for_python_313(build: Build) -> None:
    python = _layer_python(build)
    numpy = sorted((python / "numpy" / "_core").glob("_multiarray_umath.cpython-*.so"))
    assert [p.name for p in numpy] == ["_multiarray_umath.cpython-313-aarch64-linux-gnu.so"]
    assert (python / "pypdfium2_raw" / "libpdfium.so").is_file()
    # Every shared library of the layer and of the functions' own dependencies.
    binaries = [
        p
        for p in build.succeeded().rglob("*.so*")
        if re.search(r"\.so(\.\d+)*$", p.name) and p.is_file() and not p.is_symlink()
    ]
    machines = {str(p.relative_to(build.out)): _elf_machine(p) for p in binaries}
    wrong = {name: machine for name, machine in machines.items() if machine != EM_AARCH64}
    assert len(binaries) > 10
    assert not wrong, f"not AArch64 (e_machine {EM_AARCH64}): {wrong}"
    # The sync function's own compiled dependencies (functions/sync/requirements.txt), which
    # only it loads: the tests that run it (tests/lambda_layout) build for x86_64.
    sync = build.out / "SyncFunction"
    for package in ("selectolax", "cryptography"):
        found = [name for name in machines if name.startswith(f"SyncFunction/{package}/")]
        assert found, f"no {package} binaries in {sync}"


def _handler_file(handler: str) -> str:
    """`app.handler` -> app.py; a Web Adapter function's handler is its start script itself."""
    return handler if handler.endswith(".sh") else handler.rsplit(".", 1)[0] + ".py"


def test_sam_build_every_function_folder_is_built_with_its_handler(build: Build) -> None:
    source = yaml.load((REPO / "template.yaml").read_text(), Loader=CloudFormationLoader)
    built = build.template()["Resources"]
    functions = {
        name: resource["Properties"]
        for name, resource in source["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
        and resource["Properties"].get("PackageType") != "Image"
    }
    # Every function folder is a zip function's code, or a container image's Dockerfile.
    images = {
        Path(source["Resources"][name]["Metadata"]["Dockerfile"]).parent.name
        for name in image_functions((REPO / "template.yaml").read_text())
    }
    folders = {p.name for p in (REPO / "functions").iterdir() if p.is_dir()}
    assert images == {"ocr"}
    assert {Path(p["CodeUri"]).name for p in functions.values()} | images == folders
    for name, properties in functions.items():
        handler = _handler_file(properties["Handler"])
        code = build.succeeded() / built[name]["Properties"]["CodeUri"]
        source_file = REPO / properties["CodeUri"] / handler
        assert (code / handler).read_bytes() == source_file.read_bytes(), f"{name}: {handler}"
        if handler.endswith(".sh"):
            assert os.access(code / handler, os.X_OK), f"{name}: {handler} is not executable"
