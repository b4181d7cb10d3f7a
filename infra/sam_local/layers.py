"""The layers `sam local` puts at /opt, without downloading any:

- Powertools: the public layer (AWSLambdaPowertoolsPythonV3-python313-x86_64, the ARN the local
  template names) cannot be downloaded here; the same release from PyPI, with the extras the
  public layer bundles (Tracer's aws-xray-sdk, Parser's pydantic, Validation's fastjsonschema:
  https://docs.aws.amazon.com/powertools/python/latest/#lambda-layer), as x86_64 CPython 3.13
  wheels, built once per release and kept, goes into SAM's layer cache under the name SAM gives
  that ARN, where `sam local` looks before it downloads.
- docchat: `sam local` rebuilds its image with the layers on every invoke when a layer is
  defined in the template (20 to 50 s each here, for 145 MB of layers), so the invoke template
  names the built DocchatLayer by an ARN made from its content digest and the built folder is
  put in the cache under that ARN's name: one image per run, and a changed layer is a new ARN."""

from __future__ import annotations

import hashlib
import shutil
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from infra.sam_local.tools import PYTHON_VERSION, SetupError, run

EXTRAS = "tracer,parser,validation"
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64", "manylinux_2_34_x86_64")
REGION = "us-east-1"
ACCOUNT = "123456789012"


def powertools_layer(cache: Path) -> Path:
    """The layer's folder (python/ inside it), built unless the cache has this release."""
    version = metadata.version("aws-lambda-powertools")
    layer = cache / f"powertools-{version}-py{PYTHON_VERSION}-x86_64"
    if (layer / ".complete").is_file():
        return layer
    shutil.rmtree(layer, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    command += ["--only-binary=:all:", "--implementation", "cp", "--python-version", PYTHON_VERSION]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    command += ["--target", str(layer / "python"), f"aws-lambda-powertools[{EXTRAS}]=={version}"]
    run(command, timeout=600)
    (layer / ".complete").write_text(f"aws-lambda-powertools[{EXTRAS}]=={version}\n")
    return layer


def cached_name(arn: str) -> str:
    """The folder SAM's layer downloader keeps `arn` in (samcli.lib.providers.provider.
    LayerVersion._compute_layer_name): <name>-<version>-<first 10 hex of the ARN's sha256>."""
    _, name, version = arn.rsplit(":", 2)
    return f"{name}-{version}-{hashlib.sha256(arn.encode()).hexdigest()[:10]}"


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(folder)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _resolved_arn(entry: Any, parameters: dict[str, Any]) -> str | None:
    """A layer's ARN as `sam local` resolves it (the Fn::Sub the template writes), or None."""
    text = entry.get("Fn::Sub") if isinstance(entry, dict) else entry
    if not isinstance(text, str) or not text.startswith("arn:"):
        return None
    values = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}
    values.update({k: str(v.get("Default", "")) for k, v in parameters.items()})
    for name, value in values.items():
        text = text.replace("${" + name + "}", value)
    return text


def invoke_template(built: Path, *, layer_cache: Path, powertools: Path) -> Path:
    """The built template with every layer named by an ARN whose content is in `layer_cache`
    (see the module's docstring); written beside the built one, whose relative paths it keeps."""
    template = yaml.safe_load(built.read_text())
    parameters = template.get("Parameters", {})
    docchat = built.parent / template["Resources"]["DocchatLayer"]["Properties"]["ContentUri"]
    docchat_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:layer:docchat-built-{_digest(docchat)}:1"
    layer_cache.mkdir(parents=True, exist_ok=True)
    seeded: dict[str, Path] = {docchat_arn: docchat}
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        layers = properties.get("Layers")
        if resource["Type"] != "AWS::Serverless::Function" or not layers:
            continue
        named = []
        for entry in layers:
            if entry == {"Ref": "DocchatLayer"}:
                named.append(docchat_arn)
                continue
            arn = _resolved_arn(entry, parameters)
            if arn is None or "AWSLambdaPowertoolsPythonV3" not in arn:
                raise SetupError(f"no local stand-in for the layer {entry!r}")
            seeded[arn] = powertools
            named.append(arn)
        properties["Layers"] = named
    for arn, folder in seeded.items():
        link = layer_cache / cached_name(arn)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(folder.resolve(), target_is_directory=True)
    out = built.parent / "template.invoke.yaml"
    out.write_text(yaml.safe_dump(template, sort_keys=False))
    return out
