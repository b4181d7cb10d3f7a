"""Run the output of `sam build` the way Lambda runs it, without Docker and without AWS.

What is emulated, and from which documentation:
- The layers' contents at /opt/python, read-only, in a private mount namespace (a tmpfs on /opt,
  never the machine's own /opt): https://docs.aws.amazon.com/lambda/latest/dg/packaging-layers.html
  ("Layer paths for each Lambda runtime": python -> /opt/python). Later layers overwrite earlier
  ones, so the stand-in for the public Powertools layer goes in first, then the docchat layer.
- The function code as the task root and the working directory; Lambda's defined runtime
  environment variables (LAMBDA_TASK_ROOT, LAMBDA_RUNTIME_DIR, PATH, LD_LIBRARY_PATH, LANG, TZ,
  AWS_EXECUTION_ENV, AWS_LAMBDA_FUNCTION_*, ...):
  https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime
  and no PYTHONPATH at all.
- The Python runtime's module search order for handler functions: task root, then
  /opt/python/lib/python3.13/site-packages, then /opt/python, then the runtime's own libraries
  (https://docs.aws.amazon.com/lambda/latest/dg/python-package.html, "dependency search path",
  and https://docs.aws.amazon.com/lambda/latest/dg/python-image.html). A venv of Python 3.13 with
  boto3 plays /var/lang (the runtime ships the SDK there since 3.11); awslambdaric plus a small
  bootstrap that sets sys.path in that order plays /var/runtime.
- Handler functions run under the Lambda runtime interface emulator that ships in aws-sam-cli.
- The chat function is started as the Lambda Web Adapter starts a zip function's handler script
  (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap execs $LAMBDA_TASK_ROOT/$_HANDLER with the function's
  environment), and WebAdapter below polls its readiness path and streams responses as the
  adapter's README describes: https://github.com/awslabs/aws-lambda-web-adapter#readiness-check
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO
from tests.infra import intrinsics, zip_template
from tests.infra.test_statemachine import CloudFormationLoader

PYTHON_VERSION = "3.13"
REGION = "us-east-1"
ACCOUNT = "123456789012"
RIE_IN_SAMCLI = "samcli/local/rapid/aws-lambda-rie-x86_64"
UNSHARE = "/usr/bin/unshare"
BUILD_TIMEOUT_S = 300
PIP_TIMEOUT_S = 300
# Powertools' public layer (AWSLambdaPowertoolsPythonV3-python313-*) is not reachable offline;
# the same release from PyPI with the extras the layer bundles (Tracer's aws-xray-sdk, Parser's
# pydantic v2, Validation's fastjsonschema) stands in for it:
# https://docs.aws.amazon.com/powertools/python/latest/#lambda-layer
POWERTOOLS_EXTRAS = "tracer,parser,validation"

NAMESPACE_SCRIPT = """\
#!/bin/sh
# Runs "$@" with Lambda's /opt: a tmpfs in this private mount namespace, the layers' python/
# bound read-only at /opt/python. The machine's own /opt is never touched.
set -eu
layers=$1
shift
mount -t tmpfs -o size=1m,mode=0755 lambda-opt /opt
mkdir /opt/python
mount --bind "$layers/python" /opt/python
mount -o remount,bind,ro /opt/python
mount -o remount,ro /opt
exec "$@"
"""

BOOTSTRAP = '''\
"""Plays the Python runtime's bootstrap.py: the documented module search order (task root,
/opt/python/lib/pythonX.Y/site-packages, /opt/python, then the runtime's libraries), then the
runtime interface client with the configured handler (_HANDLER)."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
version = f"python{sys.version_info.major}.{sys.version_info.minor}"
first = [os.environ["LAMBDA_TASK_ROOT"], f"/opt/python/lib/{version}/site-packages", "/opt/python"]
sys.path[:] = first + [p for p in sys.path if p != here] + [here]

from awslambdaric import __main__ as ric  # noqa: E402

ric.main([sys.argv[0], os.environ["_HANDLER"]])
'''


def why_not_runnable() -> str | None:
    """Why this machine cannot run the harness, or None."""
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        return "the harness runs x86_64 Linux builds (and the x86_64 emulator); this is not one"
    if os.geteuid() != 0:
        return "a private mount namespace for /opt needs root (unshare -m)"
    if not Path(UNSHARE).is_file():
        return f"{UNSHARE} is missing (util-linux)"
    probe = subprocess.run(
        [UNSHARE, "-m", "--propagation", "private", "true"], capture_output=True, timeout=30
    )
    if probe.returncode != 0:
        return f"unshare -m does not work here: {probe.stderr.decode(errors='replace').strip()}"
    if sam_binary() is None:
        return "aws-sam-cli not found: `make install` puts it in .venv-sam (or set DOCCHAT_SAM)"
    if rie_binary() is None:
        return "aws-lambda-rie-x86_64 not found in the aws-sam-cli install"
    if runtime_python() is None:
        return f"no Python {PYTHON_VERSION} here (pyenv or python{PYTHON_VERSION} on PATH)"
    return None


def sam_binary() -> Path | None:
    configured = os.environ.get("DOCCHAT_SAM")
    sam = Path(configured) if configured else REPO / ".venv-sam" / "bin" / "sam"
    return sam if sam.is_file() else None


def rie_binary() -> Path | None:
    sam = sam_binary()
    if sam is None:
        return None
    found = sorted(sam.resolve().parent.parent.glob(f"lib/python3*/site-packages/{RIE_IN_SAMCLI}"))
    return found[0] if found else None


def runtime_python() -> Path | None:
    """A real Python 3.13 executable: pyenv's, else python3.13 on PATH."""
    candidates: list[str] = []
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run(
            [pyenv, "root"], capture_output=True, text=True, timeout=30, check=False
        ).stdout.strip()
        if root:
            candidates += map(
                str, sorted(Path(root).glob(f"versions/{PYTHON_VERSION}*/bin/python3"))
            )
    candidates += [c for c in [shutil.which(f"python{PYTHON_VERSION}")] if c]
    check = f"import sys; print(sys.executable if sys.version[:4] == {PYTHON_VERSION!r} else '')"
    for candidate in candidates:
        found = subprocess.run(
            [candidate, "-c", check], capture_output=True, text=True, timeout=30, check=False
        )
        if found.returncode == 0 and found.stdout.strip():
            return Path(found.stdout.strip())
    return None


def _run(command: list[str], *, timeout: float, **kwargs: Any) -> None:
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(command)} failed with {result.returncode}:\n"
            f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )


# --- sam build for the host architecture -----------------------------------------------------


def host_template(source: Path, dest: Path) -> Path:
    """template.yaml built for x86_64 (the arm64 wheels cannot run here), with every local
    CodeUri/ContentUri/DefinitionUri made absolute so the copy builds from anywhere, and without
    the container-image functions (no Docker here: tests/infra/zip_template.py says more)."""
    text = source.read_text()
    swaps = (
        (r"Architectures: \[arm64\]", "Architectures: [x86_64]"),
        (r"BuildArchitecture: arm64", "BuildArchitecture: x86_64"),
    )
    for pattern, replacement in swaps:
        text, count = re.subn(pattern, replacement, text)
        assert count, f"template.yaml has no {pattern!r} any more: update the harness"
    dest.write_text(
        zip_template.absolute_paths(zip_template.without_image_functions(text), source.parent)
    )
    return dest


def sam_build(work: Path) -> Path:
    """`sam build` of the x86_64 copy of template.yaml; the build directory."""
    sam, python = sam_binary(), runtime_python()
    assert sam and python
    template = host_template(REPO / "template.yaml", work / "template.yaml")
    out = work / "build"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        SAM_CLI_TELEMETRY="0",
        AWS_DEFAULT_REGION=REGION,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_EC2_METADATA_DISABLED="true",
        PATH=os.pathsep.join([str(python.parent), env.get("PATH", "")]),
        # The layer's makefile build learns its architecture only from this.
        LAYER_ARCH="x86_64",
    )
    _run(
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
            REGION,
        ],
        timeout=BUILD_TIMEOUT_S,
        cwd=work,
        env=env,
    )
    return out


# --- the execution environment ------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    build: Path  # `sam build` output
    opt: Path  # mounted as /opt in the namespace: python/ = Powertools stand-in + docchat layer
    lang: Path  # plays /var/lang: Python 3.13 and the runtime's boto3
    runtime: Path  # plays /var/runtime: awslambdaric and bootstrap.py
    namespace_script: Path
    template: dict[str, Any] = field(repr=False)

    def functions(self) -> dict[str, str]:
        """functions/<folder> name -> the template's logical id."""
        source = yaml.load((REPO / "template.yaml").read_text(), Loader=CloudFormationLoader)
        found = {}
        for name, resource in source["Resources"].items():
            if resource["Type"] == "AWS::Serverless::Function" and (
                "CodeUri" in resource["Properties"]  # not the image functions
            ):
                found[Path(resource["Properties"]["CodeUri"]).name] = name
        return found

    def task_root(self, folder: str) -> Path:
        return self.build / self.functions()[folder]

    def in_namespace(self, command: list[str]) -> list[str]:
        """`command` run with this layout's layers at /opt."""
        return [
            UNSHARE,
            "-m",
            "--propagation",
            "private",
            "/bin/sh",
            str(self.namespace_script),
            str(self.opt),
            *command,
        ]

    def python(self) -> Path:
        return self.lang / "bin" / "python"


def prepare_layout(work: Path, build: Path) -> Layout:
    python = runtime_python()
    assert python
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    versions = {name: metadata.version(name) for name in ("boto3", "awslambdaric")}
    powertools = metadata.version("aws-lambda-powertools")

    lang = work / "lang"
    _run([str(python), "-m", "venv", "--without-pip", str(lang)], timeout=120)
    site = lang / "lib" / f"python{PYTHON_VERSION}" / "site-packages"
    _run([*pip, "--target", str(site), f"boto3=={versions['boto3']}"], timeout=PIP_TIMEOUT_S)

    runtime = work / "runtime"
    _run(
        [*pip, "--target", str(runtime), f"awslambdaric=={versions['awslambdaric']}"],
        timeout=PIP_TIMEOUT_S,
    )
    (runtime / "bootstrap.py").write_text(BOOTSTRAP)

    opt = work / "opt"
    _run(
        [
            *pip,
            "--target",
            str(opt / "python"),
            f"aws-lambda-powertools[{POWERTOOLS_EXTRAS}]=={powertools}",
        ],
        timeout=PIP_TIMEOUT_S,
    )
    template = yaml.load((build / "template.yaml").read_text(), Loader=CloudFormationLoader)
    layer = build / template["Resources"]["DocchatLayer"]["Properties"]["ContentUri"]
    shutil.copytree(layer / "python", opt / "python", dirs_exist_ok=True)  # later layer wins

    script = work / "lambda-opt.sh"
    script.write_text(NAMESPACE_SCRIPT)
    return Layout(build, opt, lang, runtime, script, template)


def template_environment(layout: Layout, folder: str, known: Mapping[str, str]) -> dict[str, str]:
    """The function's Environment.Variables from the built template (Globals, then its own),
    resolved as CloudFormation would for the default parameters (reranking off: no stand-in
    for Rerank) and `known` resources (logical id or `Id.Attribute` -> value)."""
    stack = intrinsics.Stack(
        layout.template,
        {"RerankModelId": ""},
        name="docchat-harness",
        region=REGION,
        account=ACCOUNT,
        known=dict(known),
    )
    variables: dict[str, Any] = {}
    globals_env = layout.template.get("Globals", {}).get("Function", {}).get("Environment", {})
    own = layout.template["Resources"][layout.functions()[folder]]["Properties"]
    for block in (globals_env, own.get("Environment", {})):
        variables.update(block.get("Variables", {}))
    resolved = {name: str(stack.resolve(value)) for name, value in variables.items()}
    unknown = {name: value for name, value in resolved.items() if re.search(r"<[\w.:]+>", value)}
    if unknown:
        raise AssertionError(f"the harness cannot resolve {unknown} in {folder}'s environment")
    return resolved


def lambda_environment(
    layout: Layout, folder: str, *, variables: Mapping[str, str]
) -> dict[str, str]:
    """What Lambda puts in a function's environment (the defined runtime variables, with the
    layout's paths standing for /var/task, /var/runtime and /var/lang), plus `variables`."""
    properties = layout.template["Resources"][layout.functions()[folder]]["Properties"]
    defaults = layout.template.get("Globals", {}).get("Function", {})
    # A value may be an intrinsic (the Chunk function's Timeout depends on ChunkContext): as
    # CloudFormation resolves it for the default parameters.
    stack = intrinsics.Stack(layout.template, name="docchat-harness", region=REGION)
    memory, timeout = (
        stack.resolve(properties.get(key, defaults[key])) for key in ("MemorySize", "Timeout")
    )
    task_root, runtime = layout.task_root(folder), layout.runtime
    name = f"docchat-harness-{folder}"
    return {
        "_HANDLER": properties["Handler"],
        "AWS_EXECUTION_ENV": f"AWS_Lambda_python{PYTHON_VERSION}",
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory),
        "AWS_LAMBDA_FUNCTION_TIMEOUT": str(timeout),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "2026/11/23/[$LATEST]harness",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "LAMBDA_TASK_ROOT": str(task_root),
        "LAMBDA_RUNTIME_DIR": str(runtime),
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "PATH": f"{layout.lang / 'bin'}:/usr/local/bin:/usr/bin/:/bin:/opt/bin",
        "LD_LIBRARY_PATH": (
            f"{layout.lang / 'lib'}:/lib64:/usr/lib64:{runtime}:{runtime}/lib:"
            f"{task_root}:{task_root}/lib:/opt/lib"
        ),
        **variables,
    }


def harness_variables(*, aws_endpoint: str, bedrock_endpoint: str) -> dict[str, str]:
    """What the harness adds beyond Lambda's and the template's variables: where the stand-ins
    for AWS listen, and guards that keep the function off the machine's own AWS files and off
    the network."""
    return {
        "AWS_ENDPOINT_URL": aws_endpoint,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock_endpoint,
        # The anthropic SDK's Bedrock client reads its own variable, not botocore's.
        "ANTHROPIC_BEDROCK_BASE_URL": bedrock_endpoint,
        "AWS_CONFIG_FILE": "/nonexistent/aws-config",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
        "AWS_EC2_METADATA_DISABLED": "true",
        # Any HTTP(S) call beyond loopback goes to a closed port and fails.
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        # X-Ray is not emulated (Lambda would give the tracer a facade segment).
        "POWERTOOLS_TRACE_DISABLED": "true",
    }


# --- processes ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a process started in its own session, and everything it started."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
    with contextlib.suppress(ProcessLookupError):  # children may outlive the leader
        os.killpg(process.pid, signal.SIGKILL)


@dataclass
class Invocation:
    name: str
    status: int
    function_error: str
    body: Any
    log: str

    def ok(self) -> Any:
        """The handler's result; an invocation error fails the test with the handler's message."""
        raised = isinstance(self.body, dict) and "errorType" in self.body
        if self.status != 200 or self.function_error or raised:
            raise AssertionError(
                f"{self.name}: invocation failed (HTTP {self.status}, "
                f"function error {self.function_error or '-'}): "
                f"{json.dumps(self.body, indent=2)}\n--- emulator and function log ---\n{self.log}"
            )
        return self.body


class Emulator:
    """Runs a built handler function under the runtime interface emulator, one cold start per
    invocation, in the Lambda layout."""

    START_TIMEOUT_S = 20

    def __init__(
        self, layout: Layout, known: Mapping[str, str], extra: Mapping[str, str], logs: Path
    ) -> None:
        self.layout, self.known, self.extra, self.logs = layout, dict(known), dict(extra), logs
        self.invocations = 0

    def environment(self, folder: str) -> dict[str, str]:
        """Lambda's variables, the template's for this function, then the harness's."""
        variables = {**template_environment(self.layout, folder, self.known), **self.extra}
        return lambda_environment(self.layout, folder, variables=variables)

    def invoke(
        self, folder: str, event: Any, *, environment: Mapping[str, str] | None = None
    ) -> Invocation:
        """Invoke the built function of functions/<folder>; with `environment`, the function
        those variables describe (its LAMBDA_TASK_ROOT: a container image's task root)."""
        port, runtime_port = free_port(), free_port()
        self.invocations += 1
        log = self.logs / f"{self.invocations:02d}-{folder}.log"
        env = dict(environment) if environment is not None else self.environment(folder)
        timeout = int(env["AWS_LAMBDA_FUNCTION_TIMEOUT"])
        command = self.layout.in_namespace(
            [
                str(rie_binary()),
                "--runtime-interface-emulator-address",
                f"127.0.0.1:{port}",
                "--runtime-api-address",
                f"127.0.0.1:{runtime_port}",
                str(self.layout.python()),
                str(self.layout.runtime / "bootstrap.py"),
            ]
        )
        with log.open("wb") as out:
            process = subprocess.Popen(
                command,
                cwd=env["LAMBDA_TASK_ROOT"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_for_port(port, process, log)
            return self._post(folder, port, event, log, timeout + 30)
        finally:
            stop(process)

    def _wait_for_port(self, port: int, process: subprocess.Popen[bytes], log: Path) -> None:
        deadline = time.monotonic() + self.START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"the emulator exited with {process.returncode}:\n{tail(log)}")
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.settimeout(0.5)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.05)
        raise AssertionError(
            f"the emulator did not listen within {self.START_TIMEOUT_S} s:\n{tail(log)}"
        )

    @staticmethod
    def _post(name: str, port: int, event: Any, log: Path, timeout: float) -> Invocation:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/2015-03-31/functions/function/invocations",
            data=json.dumps(event).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, headers, raw = response.status, response.headers, response.read()
        except urllib.error.HTTPError as exc:
            status, headers, raw = exc.code, exc.headers, exc.read()
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        return Invocation(name, status, headers.get("X-Amz-Function-Error", ""), body, tail(log))


class NotReady(AssertionError):
    """The web app never passed the adapter's readiness check."""


@dataclass
class Streamed:
    status: int
    headers: dict[str, str]
    chunks: list[bytes]  # as they arrived, unmerged
    request_id: str = ""  # API Gateway's, as the adapter forwarded it

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


class WebAdapter:
    """The Lambda Web Adapter as its README describes it, for a zip function:
    - AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap makes the runtime exec the handler script
      ($LAMBDA_TASK_ROOT/$_HANDLER) with the function's environment, cwd the task root;
    - the adapter polls http://127.0.0.1:$AWS_LWA_READINESS_CHECK_PORT (default AWS_LWA_PORT)
      $AWS_LWA_READINESS_CHECK_PATH every 10 ms; a status from 100 up to
      AWS_LWA_READINESS_CHECK_MIN_UNHEALTHY_STATUS (default 500) means ready;
    - with AWS_LWA_INVOKE_MODE=response_stream each invocation is forwarded to the app and its
      body streamed back as it is produced;
    - each request carries API Gateway's request context as JSON in `x-amzn-request-context`
      (https://awslabs.github.io/aws-lambda-web-adapter/features/request-context.html), here
      the fields of a REST API's context the app may read, with a new requestId each time.
    https://github.com/awslabs/aws-lambda-web-adapter#configurations and #readiness-check
    Not emulated otherwise: the API Gateway event <-> HTTP request translation; requests go
    straight to the app as HTTP."""

    POLL_S = 0.01

    def __init__(self, layout: Layout, env: Mapping[str, str], log: Path) -> None:
        self.layout, self.env, self.log = layout, dict(env), log
        self.task_root = Path(self.env["LAMBDA_TASK_ROOT"])
        assert self.env.get("AWS_LAMBDA_EXEC_WRAPPER") == "/opt/bootstrap", self.env
        assert self.env.get("AWS_LWA_INVOKE_MODE") == "response_stream", self.env
        self.port = int(self.env.get("AWS_LWA_PORT", "8080"))
        self.check_port = int(self.env.get("AWS_LWA_READINESS_CHECK_PORT", self.port))
        self.check_path = self.env.get("AWS_LWA_READINESS_CHECK_PATH", "/")
        self.unhealthy = int(self.env.get("AWS_LWA_READINESS_CHECK_MIN_UNHEALTHY_STATUS", "500"))
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                self.layout.in_namespace([str(self.task_root / self.env["_HANDLER"])]),
                cwd=self.task_root,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)

    def wait_ready(self, timeout: float) -> float:
        """Seconds until the readiness check passed; NotReady (with the app's log) if the app
        exits or the check does not pass within `timeout` (Lambda's init would time out)."""
        assert self.process is not None
        started = time.monotonic()
        last = "no answer"
        while time.monotonic() - started < timeout:
            if self.process.poll() is not None:
                raise NotReady(
                    f"the web app exited with {self.process.returncode} before it was ready "
                    f"({self.check_path}: {last}):\n{tail(self.log)}"
                )
            try:
                status = self._get_status()
            except OSError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if 100 <= status < self.unhealthy:
                    return time.monotonic() - started
                last = f"HTTP {status}"
            time.sleep(self.POLL_S)
        raise NotReady(
            f"the web app was not ready within {timeout} s "
            f"(last answer of {self.check_path}: {last}):\n{tail(self.log)}"
        )

    def _get_status(self) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", self.check_port, timeout=2)
        try:
            connection.request("GET", self.check_path)
            return connection.getresponse().status
        finally:
            connection.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        timeout: float = 60,
        claims: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Streamed:
        """Forward one request; the response's body as the chunks arrived. `claims` are the ID
        token's, as a Cognito user pool authorizer puts them in the context (authorizer.claims:
        https://awslabs.github.io/aws-lambda-web-adapter/features/request-context.html)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        request_id = str(uuid.uuid4())
        # https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html
        # (the requestContext of a REST API proxy event)
        context = {
            "accountId": ACCOUNT,
            "apiId": "docchatapi",
            "httpMethod": method,
            "path": f"/Prod{path}",
            "resourcePath": path,
            "stage": "Prod",
            "requestId": request_id,
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": "203.0.113.7"},
        }
        if claims is not None:
            context["authorizer"] = {"claims": dict(claims)}
        try:
            data = json.dumps(body).encode() if body is not None else None
            sent = {**(headers or {}), "x-amzn-request-context": json.dumps(context)}
            if data:
                sent["Content-Type"] = "application/json"
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            chunks = []
            while chunk := response.read1(65536):
                chunks.append(chunk)
            return Streamed(response.status, dict(response.getheaders()), chunks, request_id)
        finally:
            connection.close()


def sse_events(body: bytes) -> list[tuple[str, Any]]:
    """(event, data) of each Server-Sent Event in `body`."""
    events = []
    for block in body.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            events.append((fields["event"], json.loads(fields.get("data", "null"))))
    return events


def moto_client(service: str, endpoint: str) -> Any:
    import boto3

    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def layer_size(layout: Layout) -> int:
    """Bytes of the built docchat layer, unzipped."""
    layer = layout.build / layout.template["Resources"]["DocchatLayer"]["Properties"]["ContentUri"]
    return sum(p.stat().st_size for p in layer.rglob("*") if p.is_file() and not p.is_symlink())
