"""The OCR function's image (functions/ocr/Dockerfile) holds what the zip functions get from
their layers, from pinned files, and runs the handler; the template builds it for arm64.

tests/lambda_layout/test_ocr_image.py runs a task root made from these same pip commands under
the runtime interface emulator: these checks keep that task root and the image from drifting."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO
from tests.infra.dockerfile import parse
from tests.infra.test_statemachine import CloudFormationLoader

DOCKERFILE = REPO / "functions" / "ocr" / "Dockerfile"
# The AWS base image for Python 3.13 on arm64:
# https://docs.aws.amazon.com/lambda/latest/dg/python-image.html
BASE = "public.ecr.aws/lambda/python:3.13-arm64"
TASK_ROOT = "${LAMBDA_TASK_ROOT}"
HASHED = ["functions/ocr/requirements.txt", "requirements/ocr.txt"]
LAYER = ["layers/docchat/requirements.txt", "layers/docchat/requirements-nodeps.txt"]


def _pinned(path: Path) -> dict[str, str]:
    """name -> version of each `name==version` line of a requirements file."""
    text = re.sub(r"\\\n", " ", path.read_text())
    found = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line.split(" --hash", 1)[0].strip())
            found[canonicalize_name(requirement.name)] = str(requirement.specifier)
    return found


def test_dockerfile_starts_from_the_lambda_python_313_arm64_image() -> None:
    assert parse(DOCKERFILE).base == BASE


def test_dockerfile_installs_exactly_the_pinned_files_then_the_layers() -> None:
    image = parse(DOCKERFILE)
    # Each file is copied to /build/<its repository path> and installed from there, in order.
    assert image.requirement_files() == [f"/build/{p}" for p in HASHED + LAYER]
    copied = {f"{dest.rstrip('/')}/{Path(src).name}" for srcs, dest in image.copies for src in srcs}
    assert {f"/build/{p}" for p in HASHED + LAYER} <= copied
    for args in image.pip_installs:
        assert args[args.index("--target") + 1] == TASK_ROOT
        assert "--only-binary=:all:" in args
        hashed = args[-1].removeprefix("/build/") in HASHED
        assert ("--require-hashes" in args) is hashed and ("--no-deps" in args) is (
            hashed or args[-1].endswith("nodeps.txt")
        ), args
    assert image.other_runs == []


def test_dockerfile_layer_files_are_installed_as_the_layer_makefile_installs_them() -> None:
    makefile = (REPO / "layers" / "docchat" / "Makefile").read_text()
    assert "$(PIP) -r requirements.txt" in makefile
    assert "$(PIP) --no-deps -r requirements-nodeps.txt" in makefile


def test_dockerfile_copies_the_package_and_the_handler_it_runs() -> None:
    image = parse(DOCKERFILE)
    assert (["layers/docchat/docchat"], f"{TASK_ROOT}/docchat") in image.copies
    assert (["functions/ocr/app.py"], f"{TASK_ROOT}/") in image.copies
    assert image.cmd == ["app.handler"]
    assert "\nhandler = step_handler(" in (REPO / "functions" / "ocr" / "app.py").read_text()


def test_dockerfile_hashed_files_pin_every_package_with_hashes() -> None:
    for name in HASHED:
        text = (REPO / name).read_text()
        hash_ = r"\s+(?:\\\n\s+)?--hash=sha256:[0-9a-f]{64}"
        entries = re.findall(rf"^(\S+==\S+)((?:{hash_})+)", text, re.M)
        pins = _pinned(REPO / name)
        assert len(entries) == len(pins) > 0, name


def test_dockerfile_brings_what_rapidocr_and_onnxruntime_require() -> None:
    # The hashed files are installed with --no-deps: what the engine declares must be in them or
    # in docchat's requirements (those resolve their own dependencies).
    image = set(_pinned(REPO / HASHED[0])) | set(_pinned(REPO / HASHED[1]))
    layer = {
        canonicalize_name(Requirement(line).name)
        for line in (REPO / LAYER[0]).read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for package in ("rapidocr", "onnxruntime", "aws-lambda-powertools", "aws-xray-sdk"):
        for spec in metadata.requires(package) or []:
            requirement = Requirement(spec)
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            name = canonicalize_name(requirement.name)
            assert name in image | layer | {"botocore"}, f"{package} needs {name}"


def test_dockerfile_context_lets_in_only_what_it_copies() -> None:
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    allowed = [line[1:].rstrip("/") for line in ignore if line.startswith("!")]
    rules = [line for line in ignore if line and not line.startswith("#")]
    assert rules[0] == "*"  # everything else stays out
    for sources, _ in parse(DOCKERFILE).copies:
        for source in sources:
            assert any(source == a or source.startswith(a + "/") for a in allowed), source


def test_template_builds_the_ocr_image_for_arm64() -> None:
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=CloudFormationLoader)
    ocr = template["Resources"]["OcrFunction"]
    assert ocr["Properties"]["PackageType"] == "Image"
    assert not {"Runtime", "Handler", "Layers", "CodeUri"} & set(ocr["Properties"])
    assert template["Globals"]["Function"]["Architectures"] == ["arm64"]
    assert "Architectures" not in ocr["Properties"]
    assert ocr["Metadata"]["Dockerfile"] == "functions/ocr/Dockerfile"
    assert (REPO / ocr["Metadata"]["DockerContext"] / ".dockerignore").is_file()
    substitutions = template["Resources"]["IngestStateMachine"]["Properties"][
        "DefinitionSubstitutions"
    ]
    assert substitutions["OcrFunctionArn"] == {"Fn::GetAtt": ["OcrFunction", "Arn"]}
