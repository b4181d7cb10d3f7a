"""template.yaml without its container-image functions, for `sam build` here.

`sam build` builds an image function (PackageType: Image, Metadata.Dockerfile) with Docker, and
this machine has none; the zip functions and the layer build without it. The copy drops each
image function, points the state machine's substitution for its ARN at a placeholder and drops
the state machine's permission to invoke it. What the image holds is tested without Docker by
tests/lambda_layout/test_ocr_image.py (a task root made from the Dockerfile's own pip commands).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.infra.test_statemachine import CloudFormationLoader


def image_functions(text: str) -> list[str]:
    """Logical ids of the template's container-image functions."""
    template = yaml.load(text, Loader=CloudFormationLoader)
    return [
        name
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
        and resource["Properties"].get("PackageType") == "Image"
    ]


def without_image_functions(text: str) -> str:
    """`text` (template.yaml) with no container-image function left in it."""
    for name in image_functions(text):
        block = re.compile(rf"^  {name}:\n(?:(?:    .*|)\n)*?(?=^  \S|^\S)", re.MULTILINE)
        text, count = block.subn("", text)
        assert count == 1, (
            f"cannot cut {name} out of template.yaml: update tests/infra/zip_template"
        )
        placeholder = "arn:aws:lambda:${AWS::Region}:${AWS::AccountId}:function:"
        text = re.sub(rf"!GetAtt {name}\.Arn", f"!Sub {placeholder}{name}-needs-docker", text)
        text = re.sub(
            rf"^ +- LambdaInvokePolicy: \{{FunctionName: !Ref {name}\}}\n",
            "",
            text,
            flags=re.MULTILINE,
        )
        left = [
            line
            for line in text.splitlines()
            if re.search(rf"\b{name}\b(?!-needs-docker)", line)
            and not line.lstrip().startswith("#")
        ]
        assert not left, f"template.yaml still refers to {name}: {left}"
    return text


def absolute_paths(text: str, base: Path) -> str:
    """Every local CodeUri/ContentUri/DefinitionUri made absolute, so a copy builds anywhere."""
    return re.sub(
        r"^(\s+(?:CodeUri|ContentUri|DefinitionUri): )(?!s3://)(\S+)$",
        lambda m: m.group(1) + str((base / m.group(2)).resolve()),
        text,
        flags=re.MULTILINE,
    )


def zip_only_copy(source: Path, dest: Path) -> Path:
    """A buildable copy of `source` at `dest`: no image functions, absolute code paths."""
    dest.write_text(absolute_paths(without_image_functions(source.read_text()), source.parent))
    return dest
