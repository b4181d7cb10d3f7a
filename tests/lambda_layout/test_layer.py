"""The built docchat layer: every module imports in the Lambda layout, and the layer carries no
dependency docchat never imports (its unzipped size stays under a measured budget)."""

from __future__ import annotations

import json
import subprocess

from tests.lambda_layout.harness import Layout, layer_size

# Unzipped x86_64 layer (bytes of its files), measured 2026-11-23: 142.7 MB built from
# requirements.txt with every dependency (opensearch-py 3's grpcio and protobuf, langchain-core's
# langsmith with zstandard, orjson, xxhash, websockets, httpx2); 82.9 MB as layers/docchat/Makefile
# builds it (arm64: 81.1 MB). The budget leaves ~6% for dependency updates.
LAYER_BUDGET_MB = 88
# Pulled in by dependencies, never imported by docchat (checked by the import test below).
NEVER_IMPORTED = (
    "grpc",
    "google.protobuf",
    "opensearch_protobufs",
    "langsmith",
    "zstandard",
    "orjson",
    "xxhash",
)
# Only local mode runs these (layers/docchat/Makefile, LOCAL_ONLY).
LOCAL_ONLY = (
    "cli",
    "evaluate",
    "wiring/local.py",
    "serve/guards.py",
    "ingest/claims.py",
    "adapters/sqlite_index",
    "adapters/sqlite_conversations.py",
    "adapters/sqlite_errors.py",
    # The local sync; the other sources modules are the stack's sync's (functions/sync) too.
    "sources/sync.py",
)
# The Convert function ships the Office and HTML readers itself
# (functions/convert/requirements.txt).
CONVERT_ONLY = ("docchat.ingest.formats.",)  # its modules; the package itself needs none
# The sync function ships the walkers' HTML parser itself (functions/sync/requirements.txt):
# these import it; the chat function's /health reads the stack's sources without them.
SYNC_ONLY = (
    "docchat.sources.crawl",
    "docchat.sources.confluence",
    "docchat.sources.driveanswers",
    "docchat.sources.gdrive",
    "docchat.sources.graph",
    "docchat.sources.serviceaccount",
    "docchat.sources.settle",
    "docchat.sources.stack_sync",
    "docchat.sources.walk",
)

PROBE = """
import importlib, json, pkgutil, sys
sys.path[:0] = [sys.argv[1], "/opt/python"]
import docchat
failed = {}
for module in pkgutil.walk_packages(docchat.__path__, "docchat."):
    # An argument ending in "." leaves out the modules under it.
    left_out = sys.argv[2:]
    if any(module.name == a or (a[-1] == "." and module.name.startswith(a)) for a in left_out):
        continue
    try:
        importlib.import_module(module.name)
    except Exception as exc:
        failed[module.name] = repr(exc)
print(json.dumps({"failed": failed, "loaded": sorted(sys.modules)}))
"""


def test_layer_unzipped_size_is_within_budget(layout: Layout) -> None:
    size_mb = layer_size(layout) / 1e6
    assert size_mb < LAYER_BUDGET_MB, f"the docchat layer is {size_mb:.0f} MB unzipped"


def test_layer_leaves_out_what_only_local_mode_runs(layout: Layout) -> None:
    # `docchat`, `docchat eval` and local mode's SQLite stores, guard and wiring run on a laptop;
    # no function imports them (the probe below imports every module the layer has, in the
    # Lambda layout, and the functions' own tests run the handlers over this layer)
    package = layout.opt / "python" / "docchat"
    assert (package / "serve").is_dir() and (package / "web" / "index.html").is_file()
    assert (package / "adapters" / "opensearch_index").is_dir()
    shipped = [name for name in LOCAL_ONLY if (package / name).exists()]
    assert not shipped, f"the layer ships {shipped}, which only local mode runs"


def test_layer_leaves_out_what_docchat_never_imports(layout: Layout) -> None:
    python = layout.opt / "python"
    shipped = [name for name in NEVER_IMPORTED if (python / name.replace(".", "/")).exists()]
    assert not shipped, f"the layer ships {shipped}, which docchat never imports"


def test_layer_every_module_imports_in_the_lambda_layout(layout: Layout) -> None:
    # Given the chat function's task root (fastapi, uvicorn, anthropic) and the layers at /opt
    # When every docchat module is imported with the runtime's Python
    result = _probe(layout, "chat", PROBE, *CONVERT_ONLY, *SYNC_ONLY)

    # Then all import, and none of the dependencies left out is needed
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["failed"] == {}
    loaded = {name for name in report["loaded"] for top in NEVER_IMPORTED if name == top}
    assert not loaded, f"imported at run time: {loaded}"


SYNC_PROBE = """
import importlib, sys
sys.path[:0] = [sys.argv[1], "/opt/python"]
for name in sys.argv[2:]:
    importlib.import_module(name)
print(sys.modules["selectolax"].__file__)
print(sys.modules["cryptography"].__file__)
"""


def test_the_sync_function_imports_its_walkers_from_what_it_ships(layout: Layout) -> None:
    # Given the sync function's task root and the layers at /opt, When the modules the layer
    # probe leaves out for it are imported, Then they import, selectolax and cryptography (a
    # Google service account's signature) from the function's zip
    result = _probe(layout, "sync", SYNC_PROBE, *SYNC_ONLY)

    assert result.returncode == 0, result.stderr[-3000:]
    shipped = result.stdout.split()[-2:]
    assert all(p.startswith(str(layout.task_root("sync"))) for p in shipped), result.stdout


def test_layer_carries_the_viewers_pdfjs_with_its_licence(layout: Layout) -> None:
    # The page's viewer loads pdf.js from the package's static files, never from a CDN:
    # layers/docchat/Makefile's `vendor` target put it there at build time.
    vendor = layout.opt / "python" / "docchat" / "web" / "vendor" / "pdfjs"
    names = sorted(p.name for p in vendor.iterdir()) if vendor.is_dir() else []
    assert names == ["LICENSE", "VERSION", "pdf.min.mjs", "pdf.worker.min.mjs"], names
    assert "Apache License" in (vendor / "LICENSE").read_text()


NOTES_PROBE = """
import sys
sys.path[:0] = [sys.argv[1], "/opt/python"]
from docchat.wiring.cloud import services
model = services("chunk").notes_model
print(type(model).__module__, model.model_id)
"""


def test_the_chunk_function_can_build_its_notes_model_as_built(layout: Layout) -> None:
    # Given the Chunk function's task root and the layers at /opt, with the environment the
    # template gives it for ChunkContext=model (with the variables its view requires)
    environment = {
        "DOCCHAT_DOCUMENTS_TABLE": "docchat-documents",
        "DOCCHAT_ARTIFACTS_BUCKET": "docchat-artifacts",
        "DOCCHAT_CHUNK_CONTEXT": "model",
        "DOCCHAT_MODEL_PROVIDER": "bedrock",
        "DOCCHAT_MODEL_ID": "global.anthropic.claude-sonnet-4-6",
        "AWS_REGION": "us-east-1",
    }

    # When the function builds the model that writes the notes
    result = _probe(layout, "chunk", NOTES_PROBE, environment=environment)

    # Then Claude on Bedrock's adapter loads from what was built (anthropic is not in the layer)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [
        "docchat.adapters.anthropic_model",
        "global.anthropic.claude-sonnet-4-6",
    ]


def _probe(
    layout: Layout, folder: str, code: str, *args: str, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`code` run by the runtime's Python in functions/<folder>'s task root with the layers at
    /opt; it gets the task root and `args` as its arguments."""
    task_root = layout.task_root(folder)
    command = layout.in_namespace([str(layout.python()), "-c", code, str(task_root), *args])
    return subprocess.run(
        command,
        cwd=task_root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            "PATH": f"{layout.lang / 'bin'}:/usr/bin:/bin",
            "LANG": "en_US.UTF-8",
            **(environment or {}),
        },
    )
