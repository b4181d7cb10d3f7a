"""The x86_64 variant of template.yaml that `sam build` and `sam local` run here, generated from
template.yaml on every run (never kept by hand), and the OCR Dockerfile with only its FROM swapped.

Every change is a text substitution that must match (an edit to template.yaml that makes one
miss fails the run, naming it), so YAML tags, anchors and comments stay as written:
- arm64 -> x86_64 (Globals' Architectures, the docchat layer's build and compatibility, the OCR
  image's tag): the machine is x86_64 and AWS's arm64 wheels cannot run on it;
- the public Powertools layer's ARN names its x86_64 build; `sam local` finds it in its layer
  cache, where infra/sam_local/layers.py puts the same release installed from PyPI (no one can
  download the public layer here);
- the Lambda Web Adapter layer is dropped: it too is only an ARN, and nothing stands in for it
  (the chat function's run.sh is run in the stand-in image without it: tests/sam_local);
- the variables that point the functions at the stand-ins for AWS (moto, the Bedrock and
  OpenSearch stand-ins) are declared in Globals, empty: `sam local` only passes variables the
  template declares, and its --env-vars file gives them their values;
- the OCR image's Dockerfile is the generated copy, its context the repository;
- code paths are absolute, so the variant builds from any folder."""

from __future__ import annotations

import re
from pathlib import Path

from infra.sam_local.tools import PYTHON_VERSION, REPO, SetupError

POWERTOOLS_ARN = (
    r"!Sub arn:\$\{AWS::Partition\}:lambda:\$\{AWS::Region\}:017000801446:layer:"
    r"AWSLambdaPowertoolsPythonV3-python313-arm64:\$\{PowertoolsLayerVersion\}"
)
POWERTOOLS_X86_64 = (
    "!Sub arn:${AWS::Partition}:lambda:${AWS::Region}:017000801446:layer:"
    "AWSLambdaPowertoolsPythonV3-python313-x86_64:${PowertoolsLayerVersion}"
)
WEB_ADAPTER_LINE = (
    r"^ +- !Sub arn:\$\{AWS::Partition\}:lambda:\$\{AWS::Region\}:753240598075:layer:"
    r"LambdaAdapterLayerArm64:\$\{LambdaWebAdapterLayerVersion\}\n"
)
BASE_IMAGE = f"public.ecr.aws/lambda/python:{PYTHON_VERSION}-x86_64"
#: Declared for every function (empty here); the run's --env-vars file sets them.
STAND_IN_VARIABLES = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_EC2_METADATA_DISABLED",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "POWERTOOLS_TRACE_DISABLED",
)


def _swap(text: str, pattern: str, replacement: str, *, count: int, flags: int = 0) -> str:
    swapped, found = re.subn(pattern, replacement, text, flags=flags)
    if found != count:
        raise SetupError(
            f"template.yaml has {found} match(es) of {pattern!r}, the local variant expects "
            f"{count}: update infra/sam_local/template.py"
        )
    return swapped


def local_template(text: str, *, dockerfile: Path, base: Path = REPO) -> str:
    """template.yaml's `text` made into the local variant (see the module's docstring)."""
    text = _swap(text, r"Architectures: \[arm64\]", "Architectures: [x86_64]", count=2)
    text = _swap(text, r"BuildArchitecture: arm64", "BuildArchitecture: x86_64", count=1)
    text = _swap(text, r"DockerTag: python3\.13-arm64", "DockerTag: python3.13-x86_64", count=1)
    text = _swap(text, POWERTOOLS_ARN, POWERTOOLS_X86_64, count=2)
    text = _swap(text, WEB_ADAPTER_LINE, "", count=1, flags=re.MULTILINE)
    text = _swap(
        text,
        r"^      Dockerfile: functions/ocr/Dockerfile$",
        f"      Dockerfile: {dockerfile}",
        count=1,
        flags=re.MULTILINE,
    )
    text = _swap(
        text,
        r"^      DockerContext: \.$",
        f"      DockerContext: {base}",
        count=1,
        flags=re.MULTILINE,
    )
    declared = "".join(f'        {name}: ""\n' for name in STAND_IN_VARIABLES)
    text = _swap(
        text,
        r"^(Globals:\n  Function:\n(?:    .*\n|\n)*?    Environment:\n      Variables:\n)",
        rf"\g<1>{declared}",
        count=1,
        flags=re.MULTILINE,
    )
    return re.sub(
        r"^(\s+(?:CodeUri|ContentUri|DefinitionUri): )(?!s3://|/)(\S+)$",
        lambda m: m.group(1) + str((base / m.group(2)).resolve()),
        text,
        flags=re.MULTILINE,
    )


def local_dockerfile(text: str) -> str:
    """functions/ocr/Dockerfile with its one FROM naming the x86_64 stand-in base image."""
    return _swap(text, r"^FROM \S+$", f"FROM {BASE_IMAGE}", count=1, flags=re.MULTILINE)


def write_local_template(work: Path) -> Path:
    """The variant and its Dockerfile written into `work`; the variant's path."""
    dockerfile = work / "ocr.Dockerfile"
    dockerfile.write_text(local_dockerfile((REPO / "functions/ocr/Dockerfile").read_text()))
    template = work / "template.yaml"
    source = (REPO / "template.yaml").read_text()
    template.write_text(local_template(source, dockerfile=dockerfile))
    return template
