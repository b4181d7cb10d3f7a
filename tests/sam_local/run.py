"""One pass of `make sam-local`: the daemon, the stand-in image, `sam build` of the whole stack,
then `sam local invoke` of every function with its sample event against moto and the Bedrock and
OpenSearch stand-ins the Lambda layout tests use, and the chat function's run.sh in the image
`sam local` made. It returns plain data (answers, the registry item after each step, timings)
that the tests check; under xdist one worker runs the pass and the other reads its result."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from infra.sam_local import daemon, image, layers, sam, template
from infra.sam_local.tools import SetupError, cache_dir

from docchat.ingest.decision import doc_id_for
from tests.cli.website import Page, Site, page, serving
from tests.conftest import EXAMPLES, REPO
from tests.infra import intrinsics
from tests.infra.test_statemachine import CloudFormationLoader
from tests.lambda_layout.bedrock_stub import BedrockStub
from tests.lambda_layout.conftest import DOCS_BUCKET, PDF_KEY, make_stack
from tests.lambda_layout.harness import ACCOUNT, REGION, moto_client, runtime_python
from tests.lambda_layout.opensearch_stub import OpenSearchStub
from tests.officegen import docx_file
from tests.pdfgen import make_pdf, scanned_copy
from tests.sam_local import statemachine
from tests.sam_local.relay import Relay, bridge_gateway

DOC_ID = "dmca-75433a68"
# Sample events in pipeline order (OCR after Convert, while the PDF is in the bucket); the
# object is deleted before Remove, as it is before S3 sends Object Deleted.
ORDER = (
    "register", "convert", "ocr", "chunk", "embed", "index", "finalize", "mark_failed",
    "watchdog", "remove", "sync",
)  # fmt: skip
CHAT_READY_WITHIN_S = 90


def functions(built: dict[str, Any]) -> dict[str, str]:
    """functions/<folder> -> logical id, for every function template.yaml has that was built."""
    return {folder: name for folder, name in _folder_ids().items() if name in built["Resources"]}


def _folder_ids() -> dict[str, str]:
    """functions/<folder> -> logical id, from template.yaml's CodeUri (the build renames)."""
    source = yaml.load((REPO / "template.yaml").read_text(), Loader=CloudFormationLoader)
    found = {}
    for name, resource in source["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        properties = resource["Properties"]
        if "CodeUri" in properties:
            found[Path(properties["CodeUri"]).name] = name
        else:
            found[Path(resource["Metadata"]["Dockerfile"]).parent.name] = name
    return found


def variables(built: dict[str, Any], logical_id: str, known: dict[str, str]) -> dict[str, str]:
    """The function's Environment.Variables (Globals, then its own), resolved as CloudFormation
    would for this stack (reranking off: no stand-in for Rerank)."""
    stack = intrinsics.Stack(
        built, {"RerankModelId": ""}, name="docchat-sam-local", region=REGION,
        account=ACCOUNT, known=known,
    )  # fmt: skip
    found: dict[str, Any] = {}
    own = built["Resources"][logical_id]["Properties"]
    for block in (built.get("Globals", {}).get("Function", {}), own):
        found.update(block.get("Environment", {}).get("Variables", {}))
    return {name: str(stack.resolve(value)) for name, value in found.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, set)):
        return [_plain(v) for v in value]
    return value


def registry_item(endpoint: str, table: str, doc_id: str = DOC_ID) -> dict[str, Any] | None:
    from boto3.dynamodb.types import TypeDeserializer

    found = moto_client("dynamodb", endpoint).get_item(
        TableName=table, Key={"doc_id": {"S": doc_id}}, ConsistentRead=True
    )
    plain = TypeDeserializer()
    item = found.get("Item")
    return None if item is None else {k: _plain(plain.deserialize(v)) for k, v in item.items()}


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        urllib.request.urlopen(
            urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10
        ).close()
        yield endpoint
    finally:
        server.stop()


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def run_pass(work: Path) -> dict[str, Any]:
    """Everything `make sam-local` checks, as data; SetupError names what this machine lacks."""
    timings: dict[str, float] = {}
    started = time.monotonic()
    python = runtime_python()
    if python is None:
        raise SetupError("no Python 3.13 here for the zip builds (pyenv or python3.13 on PATH)")
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with daemon.docker_daemon(work / "dockerd"):
        timings["docker up"] = time.monotonic() - started
        mark = time.monotonic()
        base = image.ensure_base_image(logs / "image.log")
        timings["stand-in image"] = time.monotonic() - mark
        mark = time.monotonic()
        _forget_invoke_images(logs / "cleanup.log")  # none left by an interrupted run
        # The variant and its build stay between runs, one folder per checkout: SAM's build
        # cache is found through the build.toml it writes beside the build folder.
        stack = cache_dir() / f"stack-{hashlib.sha256(str(REPO).encode()).hexdigest()[:8]}"
        stack.mkdir(exist_ok=True)
        variant = template.write_local_template(stack)
        built_path = sam.sam_build(
            variant, stack / "build", cache=stack / "cache", python_bin=python.parent,
            log=logs / "build.log",
        )  # fmt: skip
        timings["sam build"] = time.monotonic() - mark
        mark = time.monotonic()
        powertools = layers.powertools_layer(cache_dir())
        invoke_path = layers.invoke_template(
            built_path, layer_cache=work / "layers", powertools=powertools
        )
        timings["layers"] = time.monotonic() - mark
        result = _invoke_all(work, invoke_path, python.parent, timings)
        result["base_image"] = base
        _forget_invoke_images(logs / "cleanup.log")
    timings["total"] = time.monotonic() - started
    result["timings"] = timings
    return result


def _forget_invoke_images(log: Path) -> None:
    """The images `sam local` made this run (a new one per layer content) and the OCR images
    a later build re-tagged, so runs do not pile them up. The stand-in base image stays, and
    so does the OCR image: Docker's build cache keeps its pip steps while their inputs do not
    change (an edited requirements file runs them again)."""
    made = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True, text=True, timeout=60, check=False,
    ).stdout.split()  # fmt: skip
    ours = [name for name in made if name.startswith("samcli/lambda-python:")]
    with log.open("a") as out:
        if ours:
            subprocess.run(["docker", "rmi", "-f", *ours], stdout=out, stderr=out, check=False)
        subprocess.run(["docker", "image", "prune", "-f"], stdout=out, stderr=out, check=False)


def _invoke_all(
    work: Path, built_path: Path, python_bin: Path, timings: dict[str, float]
) -> dict[str, Any]:
    built = yaml.load(built_path.read_text(), Loader=CloudFormationLoader)
    ids = _folder_ids()
    gateway = bridge_gateway()
    with (
        moto_server() as moto,
        BedrockStub() as bedrock,
        OpenSearchStub() as search,
        Relay(gateway, _port(moto)) as moto_relay,
        Relay(gateway, _port(bedrock.endpoint)) as bedrock_relay,
        Relay(gateway, _port(search.endpoint)) as search_relay,
    ):
        s3 = moto_client("s3", moto)
        s3.create_bucket(Bucket=DOCS_BUCKET)
        s3.upload_file(str(EXAMPLES / "dmca.pdf"), DOCS_BUCKET, PDF_KEY)
        stack = make_stack(
            "samlocal", work, moto_endpoint=moto, bedrock_endpoint=bedrock.endpoint,
            opensearch_endpoint=search.endpoint,
        )  # fmt: skip
        # The containers reach the stand-ins through the relays, never loopback.
        seen_from_containers = {
            moto: moto_relay.endpoint,
            bedrock.endpoint: bedrock_relay.endpoint,
            search.endpoint: search_relay.endpoint,
        }
        known = {k: seen_from_containers.get(v, v) for k, v in stack.known.items()}
        extra = {k: seen_from_containers.get(v, v) for k, v in stack.extra.items()}
        extra["NO_PROXY"] = f"{extra['NO_PROXY']},{gateway}"
        undeclared = sorted(set(extra) - set(template.STAND_IN_VARIABLES) - {"DOCCHAT_DATA_DIR"})
        assert not undeclared, f"the local template must declare {undeclared} for sam local"
        env_vars = work / "env.json"
        per_function = {
            logical_id: {**variables(built, logical_id, known), **extra}
            for logical_id in functions(built).values()
        }
        env_vars.write_text(json.dumps(per_function, indent=2))

        steps: dict[str, Any] = {}
        mark = time.monotonic()
        for name in ORDER:
            if name == "remove":
                s3.delete_object(Bucket=DOCS_BUCKET, Key=PDF_KEY)
            logical_id = ids[name]
            timeout = int(intrinsics.Stack(built).resolve(
                built["Resources"][logical_id]["Properties"].get("Timeout", 300)
            )) + 180  # fmt: skip
            step_started = time.monotonic()
            with (
                _source_site(gateway, s3, stack.artifacts)
                if name == "sync" else contextlib.nullcontext("")
            ) as site_url:  # fmt: skip
                invoked = sam.sam_local_invoke(
                    built_path, logical_id, REPO / "events" / f"{name}.json",
                    env_vars=env_vars, layer_cache=work / "layers", python_bin=python_bin,
                    aws_endpoint=moto, timeout=timeout,
                )  # fmt: skip
            steps[name] = {
                "function": logical_id,
                "returncode": invoked.returncode,
                "result": invoked.result,
                "log": invoked.log[-8000:],
                "item_after": registry_item(moto, stack.table),
                "seconds": round(time.monotonic() - step_started, 1),
            }
            if name == "sync":
                steps[name]["site"] = site_url
                steps[name]["objects"] = {
                    item["Key"]: s3.head_object(Bucket=DOCS_BUCKET, Key=item["Key"])["Metadata"]
                    for item in s3.list_objects_v2(Bucket=DOCS_BUCKET).get("Contents", [])
                }
                listed = s3.list_objects_v2(Bucket=stack.artifacts, Prefix="sources/state/")
                steps[name]["states"] = [item["Key"] for item in listed.get("Contents", [])]
            if name == "ocr":
                key = json.loads((REPO / "events" / "ocr.json").read_text())["range"]["key"]
                with contextlib.suppress(Exception):
                    body = s3.get_object(Bucket=stack.artifacts, Key=key)["Body"].read()
                    steps[name]["artifact"] = json.loads(body)
        timings["sam local invoke (all)"] = time.monotonic() - mark
        index_docs = {name: len(index.docs) for name, index in search.indexes.items()}
        bulk = [path for method, path in search.requests if path.endswith("/_bulk")]
        mark = time.monotonic()
        ingestion = _state_machine(work, built_path, python_bin, env_vars, moto, ids, stack.table)
        ingestion["chunks_in_opensearch"] = {
            doc_id: sum(
                1 for index in search.indexes.values() for doc in index.docs.values()
                if doc.get("doc_id") == doc_id
            )
            for doc_id in ingestion["registry"]
        }  # fmt: skip
        timings["state machine (start-lambda)"] = time.monotonic() - mark
        mark = time.monotonic()
        chat = _chat(built_path, per_function[ids["chat"]], ids["chat"])
        timings["chat run.sh"] = time.monotonic() - mark
        return {
            "steps": steps,
            "functions": functions(built),
            "index_docs_after": index_docs,
            "bulk_requests": len(bulk),
            "chat": chat,
            "ingestion": ingestion,
            "env_vars": per_function,
        }


@contextlib.contextmanager
def _source_site(gateway: str, s3: Any, artifacts: str) -> Iterator[str]:
    """A web site on loopback, relayed to the Docker bridge for the sync function's container,
    defined as the source "handbook" of the collection "harbour": its address as defined."""
    site = Site(pages={"/": Page(page("Harbour handbook", "Moor at pontoon seven."))})
    with serving(site), Relay(gateway, int(site.base.rsplit(":", 1)[1])) as relay:
        url = f"{relay.endpoint}/"
        web = {"kind": "web", "url": url, "rate": 0, "collection": "harbour"}
        s3.put_object(Bucket=artifacts, Key="sources/handbook.json", Body=json.dumps(web))
        yield url


def documents() -> dict[str, bytes]:
    """What the state machine ingests: a PDF with a text layer (deleted afterwards), a scan
    (image-only pages: the OCR map), a .docx."""
    pdf = make_pdf(
        [[("h1", f"Bridges chapter {n}")]
         + [("body", f"Line {i} of page {n} explains bridges in plain words.") for i in range(25)]
         for n in (1, 2)]
    )  # fmt: skip
    scan = scanned_copy(
        make_pdf([[("h1", "Ferry timetable"), ("body", "The ferry leaves at noon.")]])
    )
    return {"reports/bridges.pdf": pdf, "scans/ferry.pdf": scan, "notes/plan.docx": docx_file()}


def _state_machine(
    work: Path, built_path: Path, python_bin: Path, env_vars: Path, moto: str,
    ids: dict[str, str], table: str,
) -> dict[str, Any]:  # fmt: skip
    files = documents()
    with statemachine.start_lambda(
        built_path, env_vars=env_vars, layer_cache=work / "layers", python_bin=python_bin,
        moto=moto, log=work / "logs" / "start-lambda.log",
    ) as endpoint:  # fmt: skip
        runs = statemachine.run_documents(moto, endpoint, ids, files)
    registry = {
        doc_id_for(f"{statemachine.BUCKET}/{key}"): registry_item(
            moto, table, doc_id_for(f"{statemachine.BUCKET}/{key}")
        )
        for key in files
    }
    return {"runs": runs, "registry": registry, "keys": list(files)}


def _chat(built_path: Path, env: dict[str, str], logical_id: str) -> dict[str, Any]:
    """The chat function without the Lambda Web Adapter (its layer is only an ARN): run.sh
    started as the adapter starts it (the function's environment, cwd the task root), in the
    image `sam local invoke` built with the function's layers at /opt, the built code mounted
    read-only at /var/task; its readiness path polled from inside the container."""
    found = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "samcli/lambda-python"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout.split()  # fmt: skip
    if not found:
        return {"error": "no image with the layers: sam local invoke made none"}
    task_root = built_path.parent / logical_id
    port = env.get("AWS_LWA_PORT", "8080")
    path = env.get("AWS_LWA_READINESS_CHECK_PATH", "/")
    lambda_env = {
        **env,
        "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
        "AWS_LAMBDA_FUNCTION_NAME": logical_id, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048",
        "_HANDLER": "run.sh",
    }  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".env", delete=False) as env_file:
        env_file.write("".join(f"{k}={v}\n" for k, v in lambda_env.items()))
    probe = (
        "import sys, time, urllib.request\n"
        f"deadline = time.time() + {CHAT_READY_WITHIN_S}\n"
        "while time.time() < deadline:\n"
        "    try:\n"
        f"        r = urllib.request.urlopen('http://127.0.0.1:{port}{path}', timeout=5)\n"
        "        print(r.status, r.read().decode()); sys.exit(0)\n"
        "    except urllib.error.HTTPError as e:\n"
        "        print(e.code, e.read().decode()); sys.exit(0)\n"
        "    except OSError:\n"
        "        time.sleep(0.2)\n"
        "sys.exit('not ready')\n"
    )
    script = (
        "/var/task/run.sh > /tmp/app.log 2>&1 & "
        'env -u HTTP_PROXY -u HTTPS_PROXY /var/lang/bin/python -c "$PROBE"; rc=$?; '
        "echo '--- app log ---'; cat /tmp/app.log; exit $rc"
    )
    try:
        done = subprocess.run(
            [
                "docker", "run", "--rm", "--read-only", "--tmpfs", "/tmp",
                "--memory", "2048m", "--env-file", env_file.name, "--env", f"PROBE={probe}",
                "-v", f"{task_root}:/var/task:ro", "--workdir", "/var/task",
                "--entrypoint", "/bin/sh", found[0], "-c", script,
            ],
            capture_output=True, text=True, timeout=CHAT_READY_WITHIN_S + 60, check=False,
        )  # fmt: skip
    finally:
        os.unlink(env_file.name)
    return {"image": found[0], "returncode": done.returncode, "output": done.stdout + done.stderr}


def shared_pass(root: Path, run_id: str) -> dict[str, Any]:
    """The pass's result for this test run: the first worker to get here runs it, the others
    wait for it and read it. A setup failure is stored and raised again in each worker."""
    work = root / f"docchat-sam-local-{run_id}"
    work.mkdir(parents=True, exist_ok=True)
    result = work / "result.json"
    with (work / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.exists():
            try:
                outcome: dict[str, Any] = {"ok": run_pass(work)}
            except SetupError as exc:
                outcome = {"setup_error": str(exc)}
            except Exception as exc:  # stored, so that no other worker runs the pass again
                outcome = {"failure": f"{type(exc).__name__}: {exc}"}
            result.write_text(json.dumps(outcome, indent=2, default=str))
    outcome = json.loads(result.read_text())
    if "setup_error" in outcome:
        raise SetupError(outcome["setup_error"])
    if "failure" in outcome:
        raise AssertionError(f"the sam local pass failed: {outcome['failure']}")
    ran: dict[str, Any] = outcome["ok"]
    ran["work"] = str(work)
    return ran
