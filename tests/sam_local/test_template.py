"""The local variant of template.yaml is generated from it (infra/sam_local/template.py): every
substitution must still match, so an edit to template.yaml that breaks one fails here, fast."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from infra.sam_local.template import (
    STAND_IN_VARIABLES,
    local_dockerfile,
    local_template,
)
from infra.sam_local.tools import SetupError

from tests.conftest import REPO
from tests.infra.test_statemachine import CloudFormationLoader


def _variant() -> str:
    return local_template(
        (REPO / "template.yaml").read_text(), dockerfile=Path("/w/ocr.Dockerfile")
    )


def test_template_variant_is_x86_64_with_no_layer_that_cannot_be_had() -> None:
    text = _variant()
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if re.search(r"\[arm64\]|: arm64|-arm64|Arm64:", line)]
    assert "LambdaAdapterLayer" not in text
    assert text.count("AWSLambdaPowertoolsPythonV3-python313-x86_64") == 2


def test_template_variant_declares_the_stand_ins_and_builds_the_swapped_dockerfile() -> None:
    template = yaml.load(_variant(), Loader=CloudFormationLoader)
    declared = template["Globals"]["Function"]["Environment"]["Variables"]
    assert {name: declared[name] for name in STAND_IN_VARIABLES} == dict.fromkeys(
        STAND_IN_VARIABLES, ""
    )
    ocr = template["Resources"]["OcrFunction"]["Metadata"]
    assert (ocr["Dockerfile"], ocr["DockerContext"]) == ("/w/ocr.Dockerfile", str(REPO))
    assert template["Resources"]["RegisterFunction"]["Properties"]["CodeUri"] == str(
        REPO / "functions" / "register"
    )


def test_template_dockerfile_differs_only_in_its_from() -> None:
    source = (REPO / "functions" / "ocr" / "Dockerfile").read_text().splitlines()
    swapped = local_dockerfile("\n".join(source)).splitlines()
    changed = [(a, b) for a, b in zip(source, swapped, strict=True) if a != b]
    assert changed == [
        (
            "FROM public.ecr.aws/lambda/python:3.13-arm64",
            "FROM public.ecr.aws/lambda/python:3.13-x86_64",
        )
    ]


def test_template_variant_of_a_changed_template_names_what_no_longer_matches() -> None:
    text = (REPO / "template.yaml").read_text().replace("BuildArchitecture: arm64", "")
    with pytest.raises(SetupError, match=r"0 match\(es\) of 'BuildArchitecture: arm64'"):
        local_template(text, dockerfile=Path("/w/ocr.Dockerfile"))
