"""The SAM CLI commands a user runs (`sam build`, `sam local invoke`, `sam local start-lambda`),
with the environment that keeps them here: no telemetry, no AWS account (the stand-ins'
credentials), Python 3.13 first on PATH for the zip builds, the docchat layer for x86_64."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.sam_local.tools import SetupError, run, sam_binary

REGION = "us-east-1"
LINGER_S = 10
BUILD_TIMEOUT_S = 1500


def sam_environment(python_bin: Path, *, aws_endpoint: str | None = None) -> dict[str, str]:
    """With `aws_endpoint`, the SAM CLI's own AWS calls go there too: `sam local` asks STS for
    the account id before each run, which without an answer costs 12 s of retries here."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    if aws_endpoint:
        env["AWS_ENDPOINT_URL"] = aws_endpoint
    env.update(
        SAM_CLI_TELEMETRY="0",
        AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_SESSION_TOKEN="testing",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE="/nonexistent/aws-config",
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent/aws-credentials",
        PATH=os.pathsep.join([str(python_bin), env.get("PATH", "")]),
        # The layer's makefile build learns its architecture only from this.
        LAYER_ARCH="x86_64",
    )
    return env


def sam_build(template: Path, out: Path, *, cache: Path, python_bin: Path, log: Path) -> Path:
    """`sam build` of the whole stack (zip functions, the docchat layer, the OCR image); the
    built template. SAM's build cache (`cache`) reuses a function's or the layer's build while
    its code folder and requirements file hash the same; the OCR image has Docker's."""
    try:
        _build(template, out, cache=cache, python_bin=python_bin, log=log)
    except SetupError as exc:  # the stack does not build: not a machine problem
        raise BuildFailed(f"sam build failed (log: {log}): {exc}") from exc
    return out / "template.yaml"


class BuildFailed(AssertionError):
    """`sam build` of the local variant failed; the message has the end of its output."""


def _build(template: Path, out: Path, *, cache: Path, python_bin: Path, log: Path) -> None:
    run(
        [
            str(sam_binary()),
            "build",
            "--template-file",
            str(template),
            "--build-dir",
            str(out),
            "--cached",
            "--cache-dir",
            str(cache),
            "--parallel",
            "--region",
            REGION,
        ],
        timeout=BUILD_TIMEOUT_S,
        log=log,
        cwd=template.parent,
        env=sam_environment(python_bin),
    )


@dataclass
class Invoked:
    function: str
    returncode: int
    result: Any  # the function's answer, parsed (None if it printed none)
    log: str  # SAM's and the function's output

    def ok(self) -> Any:
        raised = isinstance(self.result, dict) and "errorType" in self.result
        if self.returncode != 0 or raised or self.result is None:
            raise AssertionError(
                f"sam local invoke {self.function} failed (exit {self.returncode}): "
                f"{json.dumps(self.result, indent=2)}\n--- sam and function log ---\n"
                f"{self.log[-6000:]}"
            )
        return self.result


def sam_local_invoke(
    built: Path,
    function: str,
    event: Path,
    *,
    env_vars: Path,
    layer_cache: Path,
    python_bin: Path,
    aws_endpoint: str,
    timeout: float,
) -> Invoked:
    """`sam local invoke <function> -e <event>` on the built template, as a user runs it (the
    layers from `layer_cache`: infra/sam_local/layers.py)."""
    command = [
        str(sam_binary()),
        "local",
        "invoke",
        function,
        "--template-file",
        str(built),
        "--event",
        str(event),
        "--env-vars",
        str(env_vars),
        "--layer-cache-basedir",
        str(layer_cache),
        "--skip-pull-image",
        "--region",
        REGION,
    ]
    # SAM prints the function's answer on stdout (its own log and the function's on stderr),
    # then exits; after a failed invoke it lingers until the function's timeout timer fires
    # (up to 900 s), so once the answer is in it is given a few seconds, then stopped.
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(
            command, cwd=built.parent, env=sam_environment(python_bin, aws_endpoint=aws_endpoint),
            stdout=subprocess.PIPE, stderr=errors, text=True, start_new_session=True,
        )  # fmt: skip
        answer = _read_answer(process, timeout)
        try:
            returncode = process.wait(timeout=LINGER_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            returncode = process.wait(timeout=30)
            returncode = 0 if answer is not None else returncode
        errors.seek(0)
        log = errors.read()
    return Invoked(function, returncode, answer, log)


def _read_answer(process: subprocess.Popen[str], timeout: float) -> Any:
    """The first JSON line on SAM's stdout, or None when it ends (or `timeout` passes) first."""
    assert process.stdout is not None
    timer = threading.Timer(timeout, lambda: os.killpg(process.pid, signal.SIGKILL))
    timer.start()
    try:
        for line in process.stdout:
            found = _last_json(line)
            if found is not None:
                return found
        return None
    finally:
        timer.cancel()


def _last_json(stdout: str) -> Any:
    """The function's answer: SAM prints it as the last line of its standard output."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    return None


def start_lambda_command(built: Path, *, env_vars: Path, layer_cache: Path, port: int) -> list[str]:
    """`sam local start-lambda`: Lambda's Invoke API on 127.0.0.1:<port> for every function."""
    return [
        str(sam_binary()),
        "local",
        "start-lambda",
        "--template-file",
        str(built),
        "--env-vars",
        str(env_vars),
        "--layer-cache-basedir",
        str(layer_cache),
        "--skip-pull-image",
        "--warm-containers",
        "LAZY",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--region",
        REGION,
    ]
