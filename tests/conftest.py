"""Shared fixtures: no network but loopback, real-data locations, small fake embedder."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from multiprocessing import forkserver
from pathlib import Path
from typing import Any

import numpy as np
import pypdfium2 as pdfium
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_PDFS = REPO.parent / "shared" / "data" / "pdfs"
EXAMPLES = REPO / "examples" / "pdfs"
LOOPBACK = ("::1", "localhost")

# The template's Globals give every function a metrics namespace (template.yaml,
# Globals.Function.Environment), and Powertools reads it when a handler module is first imported,
# which in a test session can be while the tests are collected: set it before that, as Lambda
# does before init. (Not the service name: the step handlers' Logger would then share its name,
# "docchat", and its handlers with the chat API's Logger in one test process.)
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "docchat")


# `slow`: needs a tool outside .venv (sam, Chromium, checkov), the Lambda layout harness, a
# deployed stack, real embedding (every CLI test ingests with the real embedder), a real server
# (uvicorn) per test, `docchat mcp` as a subprocess (tests/mcp_server), or the ingestion state
# machine run under moto (tests/functions). Whole folders and files are marked here, new tests in
# them included, so `make unit` (-m "not slow") stays under a minute; `make test` runs everything.
# test_stack.py translates the template with SAM's own Python (.venv-sam), once per parameter set.
SLOW_PATHS = (
    "tests/lambda_layout/",
    "tests/web/",
    "tests/e2e/",
    "tests/eval/",
    "tests/infra/test_sam.py",
    "tests/infra/test_sam_transform.py",
    "tests/infra/test_stack.py",
    "tests/infra/test_security.py",
    "tests/infra/test_e2e.py",
    "tests/infra/test_convert_build.py",
    "tests/api/test_server.py",
    "tests/api/test_local_guard.py",
    "tests/api/test_page_text.py",
    "tests/functions/",
    "tests/cli/",
    "tests/mcp_server/",
)


#: Whether this run is the fast loop (`make unit`: -m "not slow"); set when pytest configures,
#: before any test module is imported.
_fast_loop = False


def pytest_configure(config: pytest.Config) -> None:
    global _fast_loop
    _fast_loop = config.option.markexpr.strip() == "not slow"


def examples(full: int) -> int:
    """Hypothesis's max_examples for a property test: `full` in the whole suite (`make test`),
    a fifth of it (at least 20) in the fast loop."""
    return max(20, full // 5) if _fast_loop else full


#: Tests that drive Chromium, and tests that start containers. Docker adds and removes a network
#: interface for each container, and Chromium fails every request in flight when the host's
#: interfaces change (net::ERR_NETWORK_CHANGED, https://issues.chromium.org/issues/41465264):
#: a page whose modules were loading never started (two page tests of one clean-clone `make test`
#: logged it; two earlier failures looked the same). One xdist group runs them on one worker, one
#: after another (`--dist loadgroup`, Makefile).
NETWORK_GROUP = ("tests/web/", "tests/sam_local/")


def _shares_a_module_fixture(module: Path, seen: dict[Path, bool]) -> bool:
    """Whether a test module defines a module-scoped fixture (its index, server or build)."""
    if module not in seen:
        seen[module] = 'scope="module"' in module.read_text(encoding="utf-8")
    return seen[module]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks `slow`, and puts tests that must share a worker in one xdist group (`--dist
    loadgroup`): the browser and container tests (NETWORK_GROUP), and each module with a
    module-scoped fixture, which xdist would otherwise build once on each worker that gets one
    of its tests (SciFact's index was built twice, 150 s each, in one clean-clone run)."""
    seen: dict[Path, bool] = {}
    for item in items:
        path = item.path.resolve().relative_to(REPO).as_posix()
        if path.startswith(SLOW_PATHS):
            item.add_marker(pytest.mark.slow)
        if path.startswith(NETWORK_GROUP):
            item.add_marker(pytest.mark.xdist_group("browser-or-containers"))
        elif _shares_a_module_fixture(item.path, seen):
            item.add_marker(pytest.mark.xdist_group(path))


def pytest_sessionstart(session: pytest.Session) -> None:
    """A run over a folder (`make unit`, `make test`) starts the forkserver isolated conversions
    fork from (docchat.ingest.isolate) before it collects: the server imports the PDF engine and
    the format readers (0.8 s of CPU measured here, far more wall time on a loaded machine) while
    the tests are collected, instead of inside the first test that converts a file."""
    config = session.config
    if config.option.collectonly:
        return
    if not any(Path(arg.split("::")[0]).is_dir() for arg in config.args):
        return
    from docchat.ingest import isolate

    if isolate._context().get_start_method() == "forkserver":
        forkserver.ensure_running()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "not slow"` (`make unit`) the slow folders and files are not even imported:
    every test in them would be deselected, and importing them (Playwright, moto's Step
    Functions, the Lambda harness) takes seconds."""
    if config.option.markexpr.strip() != "not slow":
        return None
    try:
        path = collection_path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return None
    return True if f"{path}/".startswith(SLOW_PATHS) or path in SLOW_PATHS else None


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any socket connection beyond 127.0.0.0/8 or ::1 fails the test."""
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        remote = isinstance(host, str) and not host.startswith("127.") and host not in LOOPBACK
        if remote and self.family in (socket.AF_INET, socket.AF_INET6):
            raise AssertionError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture
def dummy_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy AWS credentials, no shared config files and no endpoint overrides, so nothing
    looks for or reaches a real account."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in (
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "ANTHROPIC_BEDROCK_BASE_URL",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


def fresh_python(code: str, *, env: Mapping[str, str] | None = None, timeout: float = 60) -> str:
    """What `code` prints when a new Python runs it (what importing does, in a fresh process)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    ).stdout


def squash(text: str) -> str:
    """Compare text the way a reader would: case, spacing and line-break hyphens aside."""
    return re.sub(r"[\W_]+", "", text.casefold())


def page_texts(pdf: Path) -> list[str]:
    """Each page's text of `pdf`, squashed."""
    document = pdfium.PdfDocument(pdf)
    try:
        return [squash(page.get_textpage().get_text_range()) for page in document]
    finally:
        document.close()


class WordEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words are close. For exact tests."""

    model_id = "test-words"
    dimension = 64

    def embed_documents(
        self, texts: Sequence[str], *, on_batch: Callable[[int], None] | None = None
    ) -> np.ndarray:
        vectors = np.stack([self.embed_query(t) for t in texts]) if texts else np.zeros((0, 64))
        if on_batch:
            on_batch(len(texts))
        return vectors.astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float32)
        for word in re.findall(r"[a-z]+", text.casefold()):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector


@pytest.fixture
def word_embedder() -> WordEmbedder:
    return WordEmbedder()


@pytest.fixture
def shared_pdfs() -> Iterator[Path]:
    if not SHARED_PDFS.is_dir():
        pytest.skip(f"real PDFs not available: {SHARED_PDFS} is absent")
    yield SHARED_PDFS


#: Values for the settings the chat function requires (docchat.processes.ChatSettings);
#: nothing listens at the endpoint, and building the app makes no request.
CHAT_FUNCTION_SETTINGS = {
    "DOCCHAT_OPENSEARCH_ENDPOINT": "https://127.0.0.1:9",
    "DOCCHAT_DOCUMENTS_TABLE": "docchat-documents",
    "DOCCHAT_CONVERSATIONS_TABLE": "docchat-conversations",
}


@pytest.fixture
def chat_function_env(dummy_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The environment the chat function requires, and this container's services built
    afresh from it (docchat.wiring.cloud.services)."""
    from docchat.wiring.cloud import services

    for name, value in CHAT_FUNCTION_SETTINGS.items():
        monkeypatch.setenv(name, value)
    services.cache_clear()
    yield
    services.cache_clear()


def table_schema(resource: str) -> dict[str, Any]:
    """The key schema, attribute definitions and billing mode of the DynamoDB table `resource`
    in template.yaml: the tables tests make in moto are the stack's own."""
    from cfnlint.decode import cfn_yaml

    template = cfn_yaml.load(str(REPO / "template.yaml"))
    properties = template["Resources"][resource]["Properties"]
    keys = ("KeySchema", "AttributeDefinitions", "BillingMode")
    schema: dict[str, Any] = json.loads(json.dumps({key: properties[key] for key in keys}))
    return schema
