"""A stand-in for the Lambda Python 3.13 base image (public.ecr.aws/lambda/python:3.13), built
here because no image registry is reachable, and kept in Docker under a tag keyed by its inputs.

What it holds, after https://docs.aws.amazon.com/lambda/latest/dg/python-image.html and
https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html (runtime variables):
- a Debian rootfs (debootstrap --variant=minbase) of the release whose CPython is 3.13 (trixie;
  bookworm has 3.11), from the machine's own Debian mirror;
- /var/lang: a venv of that CPython holding the runtime's SDK (boto3), as Lambda's 3.13 runtime
  ships it; /var/runtime: awslambdaric and `bootstrap`, which sets the documented module search
  order for handlers (task root, /opt/python/lib/python3.13/site-packages, /opt/python, then the
  runtime's own paths: https://docs.aws.amazon.com/lambda/latest/dg/python-package.html);
- /lambda-entrypoint.sh (the image's ENTRYPOINT): `<entrypoint> <handler>` runs the bootstrap
  under the runtime API, or under the emulator when there is none (`docker run` by hand);
- the runtime interface emulator from the SAM CLI at /usr/local/bin/aws-lambda-rie.
It is tagged with the names `sam local` and the OCR Dockerfile ask for (x86_64 only)."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

from infra.sam_local.tools import PYTHON_VERSION, SetupError, apt_install, rie_binary, run

SUITE = "trixie"
PACKAGES = ("python3.13", "python3.13-venv", "ca-certificates")
KEYED_REPOSITORY = "docchat-sam-local/lambda-python"
# `sam local` asks for <runtime>-<architecture>; the Dockerfile's FROM gets the same at build time.
BASE_NAMES = (
    f"public.ecr.aws/lambda/python:{PYTHON_VERSION}",
    f"public.ecr.aws/lambda/python:{PYTHON_VERSION}-x86_64",
)
BUILD_TIMEOUT_S = 900
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
RUNTIME_VARIABLES = {
    "LANG": "en_US.UTF-8",
    "TZ": ":UTC",
    "PATH": "/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin",
    "LD_LIBRARY_PATH": (
        "/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:"
        "/opt/lib"
    ),
    "LAMBDA_TASK_ROOT": "/var/task",
    "LAMBDA_RUNTIME_DIR": "/var/runtime",
}

BOOTSTRAP = """\
#!/bin/sh
# The Python runtime's bootstrap: the interface client with the configured handler.
export AWS_EXECUTION_ENV=AWS_Lambda_python{version}
exec /var/lang/bin/python{version} /var/runtime/bootstrap.py "$@"
"""

BOOTSTRAP_PY = '''\
"""Lambda's module search order for handlers, then the runtime interface client."""
import os
import sys

VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"
HERE = os.path.dirname(os.path.abspath(__file__))
FIRST = [os.environ.get("LAMBDA_TASK_ROOT", "/var/task"),
         f"/opt/python/lib/{VERSION}/site-packages", "/opt/python"]
sys.path[:] = FIRST + [p for p in sys.path if p not in (HERE, "")] + [HERE]
handler = sys.argv[1] if len(sys.argv) > 1 else os.environ["_HANDLER"]
os.environ["_HANDLER"] = handler

from awslambdaric import __main__ as ric  # noqa: E402

ric.main([sys.argv[0], handler])
'''

ENTRYPOINT = """\
#!/bin/sh
# <this script> <handler>: under Lambda's runtime API the bootstrap, else the emulator first.
if [ $# -ne 1 ]; then
  echo "lambda-entrypoint.sh: give the handler (module.function) as the one argument" >&2
  exit 142
fi
export _HANDLER="$1"
if [ -z "${AWS_LAMBDA_RUNTIME_API}" ]; then
  exec /usr/local/bin/aws-lambda-rie /var/runtime/bootstrap "$1"
fi
exec /var/runtime/bootstrap "$1"
"""


def runtime_pins() -> dict[str, str]:
    """The SDK and interface client versions, those the project's own venv tests with."""
    try:
        return {name: metadata.version(name) for name in ("boto3", "awslambdaric")}
    except metadata.PackageNotFoundError as exc:
        raise SetupError(f"{exc.name} is not installed here: run `make install`") from exc


def image_key() -> str:
    """A digest of everything the image is made from: a change to any builds a new one."""
    digest = hashlib.sha256()
    digest.update(Path(__file__).read_bytes())
    digest.update(repr((SUITE, PACKAGES, sorted(runtime_pins().items()))).encode())
    digest.update(hashlib.sha256(rie_binary().read_bytes()).digest())
    digest.update(hashlib.sha256(HOST_CA_BUNDLE.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _has_image(name: str) -> bool:
    probe = run(["docker", "images", "-q", name], timeout=60)
    return bool(probe.stdout.strip())


def debian_mirror() -> str:
    """The machine's Debian mirror, from its apt sources (deb822 or one-line format)."""
    for source in sorted(Path("/etc/apt").glob("sources.list*")) + sorted(
        Path("/etc/apt/sources.list.d").glob("*")
    ):
        if not source.is_file():
            continue
        for line in source.read_text().splitlines():
            words = line.split()
            if words[:1] == ["URIs:"] and words[1].rstrip("/").endswith("/debian"):
                return words[1]
            if words[:1] == ["deb"] and words[-3:-2] and "/debian" in line:
                uri = next((w for w in words[1:] if "://" in w), "")
                if uri.rstrip("/").endswith("/debian"):
                    return uri
    raise SetupError("no Debian mirror in /etc/apt/sources.list*: debootstrap needs one")


def ensure_base_image(log: Path) -> str:
    """The stand-in image's keyed tag, built unless Docker already has it; the base names point
    at it either way."""
    keyed = f"{KEYED_REPOSITORY}:{PYTHON_VERSION}-{image_key()}"
    if not _has_image(keyed):
        _build(keyed, log)
        listed = run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"], timeout=60)
        stale = [n for n in listed.stdout.split() if n.startswith(f"{KEYED_REPOSITORY}:")]
        stale = [n for n in stale if n != keyed]
        if stale:  # built from other inputs: never used again
            run(["docker", "rmi", *stale], timeout=120, log=log)
    for name in BASE_NAMES:
        run(["docker", "tag", keyed, name], timeout=60, log=log)
    return keyed


def _build(tag: str, log: Path) -> None:
    if not shutil.which("debootstrap"):
        apt_install("debootstrap", log)
    with tempfile.TemporaryDirectory(prefix="docchat-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(PACKAGES)}",
                SUITE,
                str(root),
                debian_mirror(),
            ],
            timeout=BUILD_TIMEOUT_S,
            log=log,
        )
        _install_runtime(root, log)
        _import(root, tag, log)


def _install_runtime(root: Path, log: Path) -> None:
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")  # pip reaches PyPI
    # The machine's trust store, which may hold a CA that Debian's does not: pip in the image
    # (the OCR Dockerfile's) must reach PyPI as the machine does.
    shutil.copy(HOST_CA_BUNDLE, root / HOST_CA_BUNDLE.relative_to("/"))
    pins = runtime_pins()
    chroot = [shutil.which("chroot") or "/usr/sbin/chroot", str(root)]
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
    }
    pip = [*chroot, "/var/lang/bin/pip", "install", "--quiet", "--no-cache-dir"]
    pip += ["--disable-pip-version-check", "--only-binary=:all:", "--cert", str(HOST_CA_BUNDLE)]
    run(
        [*chroot, f"/usr/bin/python{PYTHON_VERSION}", "-m", "venv", "/var/lang"],
        timeout=300,
        env=env,
    )
    run([*pip, f"boto3=={pins['boto3']}"], timeout=BUILD_TIMEOUT_S, log=log, env=env)
    run(
        [*pip, "--target", "/var/runtime", f"awslambdaric=={pins['awslambdaric']}"],
        timeout=BUILD_TIMEOUT_S,
        log=log,
        env=env,
    )
    runtime = root / "var" / "runtime"
    _write(runtime / "bootstrap", BOOTSTRAP.format(version=PYTHON_VERSION), mode=0o755)
    _write(runtime / "bootstrap.py", BOOTSTRAP_PY, mode=0o644)
    _write(root / "lambda-entrypoint.sh", ENTRYPOINT, mode=0o755)
    rie = root / "usr" / "local" / "bin" / "aws-lambda-rie"
    shutil.copy(rie_binary(), rie)
    rie.chmod(0o755)
    (root / "var" / "task").mkdir(mode=0o755, exist_ok=True)
    (root / "etc" / "resolv.conf").unlink()
    for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
        shutil.rmtree(root / cache, ignore_errors=True)


def _write(path: Path, text: str, *, mode: int) -> None:
    path.write_text(text)
    path.chmod(mode)


def _import(root: Path, tag: str, log: Path) -> None:
    changes = [f"ENV {name}={value}" for name, value in RUNTIME_VARIABLES.items()]
    changes += ["WORKDIR /var/task", 'ENTRYPOINT ["/lambda-entrypoint.sh"]']
    changes += [f"LABEL org.docchat.sam-local.key={tag.rsplit('-', 1)[-1]}"]
    archive = root.parent / "rootfs.tar"
    run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(archive), "."], timeout=600)
    command = ["docker", "import"]
    for change in changes:
        command += ["--change", change]
    run([*command, str(archive), tag], timeout=BUILD_TIMEOUT_S, log=log)
