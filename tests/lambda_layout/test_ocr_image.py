"""The OCR function's container image, as closely as this machine can run it without Docker.

The task root is made by running functions/ocr/Dockerfile's own pip commands (parsed from the
file, with the /build/ paths pointing at the repository) for x86_64 instead of arm64, then its
COPY instructions into the task root; the handler its CMD names runs under the runtime interface
emulator with no layers at /opt (an image function has none), Lambda's environment and the
template's variables for OcrFunction, against moto on loopback. What stays cloud-only (the image
really builds and runs on arm64) is checked by tests/e2e against a deployed stack.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from docchat.ingest.convert.pageocr import ocr_pages
from docchat.ingest.ocr import OcrOptions
from docchat.models import OcrPage
from tests.conftest import EXAMPLES, REPO
from tests.infra import intrinsics
from tests.infra.dockerfile import parse
from tests.infra.test_statemachine import CloudFormationLoader
from tests.lambda_layout.bedrock_stub import BedrockStub
from tests.lambda_layout.conftest import Stack, make_stack
from tests.lambda_layout.harness import (
    ACCOUNT,
    PIP_TIMEOUT_S,
    REGION,
    Emulator,
    Layout,
    _run,
    lambda_environment,
    moto_client,
    runtime_python,
)
from tests.lambda_layout.opensearch_stub import OpenSearchStub

DOCKERFILE = REPO / "functions" / "ocr" / "Dockerfile"
TASK_ROOT = "${LAMBDA_TASK_ROOT}"
# The Makefile's platform tags for the layer, for this machine's architecture.
PLATFORMS = [
    f"--platform={tag}_x86_64" for tag in ("manylinux2014", "manylinux_2_28", "manylinux_2_34")
]


def _host(path: str) -> str:
    """A path in the image's build stage -> the repository file it was copied from."""
    return str(REPO / path.removeprefix("/build/")) if path.startswith("/build/") else path


@pytest.fixture(scope="module")
def image_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image's task root (/var/task), built from the Dockerfile's own instructions."""
    python = runtime_python()
    assert python
    root = tmp_path_factory.mktemp("ocr-image") / "task"
    image = parse(DOCKERFILE)
    started = time.monotonic()
    for args in image.pip_installs:
        target = args.index("--target")
        assert args[target + 1] == TASK_ROOT
        own = [_host(a) for a in args[:target] + args[target + 2 :]]
        command = [str(python), "-m", "pip", "install", "--quiet", *own, "--target", str(root)]
        command += [*PLATFORMS, "--implementation=cp", "--python-version=3.13"]
        _run(command, timeout=PIP_TIMEOUT_S)
    for sources, destination in image.copies:
        if not destination.startswith(TASK_ROOT):
            continue  # the build stage's requirement files, used above
        into = root / destination.removeprefix(TASK_ROOT).strip("/")
        for source in sources:
            path = REPO / source
            if path.is_dir():
                shutil.copytree(path, into, ignore=shutil.ignore_patterns("__pycache__", "vendor"))
            else:
                into.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, into / path.name)
    print(f"\nOCR image task root ready in {time.monotonic() - started:.1f} s: {root}")
    return root


@pytest.fixture(scope="module")
def stack(
    moto_endpoint: str,
    bedrock: BedrockStub,
    tmp_path_factory: pytest.TempPathFactory,
) -> Stack:
    with OpenSearchStub() as search:  # not used by OCR; the stack's settings name one
        return make_stack(
            "ocr",
            tmp_path_factory.mktemp("ocr"),
            moto_endpoint=moto_endpoint,
            bedrock_endpoint=bedrock.endpoint,
            opensearch_endpoint=search.endpoint,
        )


def _environment(layout: Layout, stack: Stack, root: Path) -> dict[str, str]:
    """Lambda's variables for an image function with OcrFunction's settings from template.yaml
    (Globals, then its own), the image's task root and handler, and the harness's guards."""
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=CloudFormationLoader)
    resolver = intrinsics.Stack(
        template,
        {"RerankModelId": ""},
        name="docchat-harness",
        region=REGION,
        account=ACCOUNT,
        known=dict(stack.known),
    )
    properties = template["Resources"]["OcrFunction"]["Properties"]
    variables: dict[str, Any] = {}
    for block in (template["Globals"]["Function"], properties):
        variables.update(block.get("Environment", {}).get("Variables", {}))
    resolved = {name: str(resolver.resolve(value)) for name, value in variables.items()}
    base = lambda_environment(layout, "convert", variables={**resolved, **stack.extra})
    zip_root = base["LAMBDA_TASK_ROOT"]
    return {
        **base,
        "_HANDLER": parse(DOCKERFILE).cmd[0],
        "LAMBDA_TASK_ROOT": str(root),
        "LD_LIBRARY_PATH": base["LD_LIBRARY_PATH"].replace(zip_root, str(root)),
        "AWS_LAMBDA_FUNCTION_NAME": "docchat-harness-ocr",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/docchat-harness-ocr",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(properties["MemorySize"]),
        "AWS_LAMBDA_FUNCTION_TIMEOUT": str(properties["Timeout"]),
    }


def test_ocr_image_handler_reads_the_sample_event_under_the_emulator(
    layout: Layout,
    stack: Stack,
    image_root: Path,
    moto_endpoint: str,
    tmp_path: Path,
) -> None:
    # Given the image's task root, and no layers at /opt (image functions have none)
    no_layers = tmp_path / "opt"
    (no_layers / "python").mkdir(parents=True)
    image_layout = dataclasses.replace(layout, opt=no_layers)
    emulator = Emulator(image_layout, stack.known, stack.extra, tmp_path)
    event = json.loads((REPO / "events" / "ocr.json").read_text())

    # When the sample event (page 1 of examples/pdfs/dmca.pdf) is invoked
    invocation = emulator.invoke("ocr", event, environment=_environment(layout, stack, image_root))

    # Then it returns the artifact's key and counts, and the artifact holds what OCR in this
    # process reads on that page
    result = invocation.ok()
    stored = moto_client("s3", moto_endpoint).get_object(
        Bucket=stack.artifacts, Key=event["range"]["key"]
    )
    pages = [OcrPage.model_validate(p) for p in json.loads(stored["Body"].read())]
    expected = ocr_pages((EXAMPLES / "dmca.pdf").read_bytes(), [1], options=OcrOptions(dpi=150))
    assert [p.number for p in pages] == [1]
    assert [line.text for line in pages[0].lines] == [line.text for line in expected[0].lines]
    assert result == {
        "doc": event["doc"],
        "key": event["range"]["key"],
        "pages": 1,
        "lines": len(expected[0].lines),
    }
    # And the engine came from the task root, not from this machine's packages
    assert not (image_root / "docchat" / "web" / "vendor").exists()
    assert (image_root / "rapidocr" / "models").is_dir()
    assert (image_root / "onnxruntime").is_dir() and (image_root / "cv2").is_dir()
