"""The ingestion state machine: statelint passes, the stack substitutes every placeholder, and
every Lambda task retries service errors and routes failures to MarkFailed.

cfn-lint does not look inside an AWS::Serverless::StateMachine's definition; statelint does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO

ASL = REPO / "infra" / "statemachine" / "ingest.asl.json"
STATELINT = Path(sys.executable).parent / "statelint"
SERVICE_ERRORS = {  # what AWS advises every Lambda task to retry
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}
# Failure handlers themselves: a failure there has nowhere further to go.
NOT_CAUGHT = {"MarkFailed", "Remove"}


class CloudFormationLoader(yaml.SafeLoader):
    """Reads template.yaml, turning short-form tags (!Ref, !GetAtt, !Sub, !If ...) into the
    long form ({"Ref": ...}, {"Fn::GetAtt": ...})."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        assert isinstance(node, yaml.MappingNode)
        value = loader.construct_mapping(node, deep=True)
    return {"Ref" if suffix == "Ref" else f"Fn::{suffix}": value}


CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def _statelint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STATELINT), str(path)], capture_output=True, text=True, timeout=60, check=False
    )


def _definition() -> dict[str, Any]:
    definition: dict[str, Any] = json.loads(ASL.read_text())
    return definition


def _template() -> dict[str, Any]:
    template: dict[str, Any] = yaml.load(
        (REPO / "template.yaml").read_text(), Loader=CloudFormationLoader
    )
    return template


def _states(states: dict[str, Any], *, in_map: bool = False) -> Iterator[tuple[str, Any, bool]]:
    """(name, state, inside a Map or Parallel) for every state, nested ones included."""
    for name, state in states.items():
        yield name, state, in_map
        nested = [state.get("ItemProcessor"), state.get("Iterator"), *state.get("Branches", [])]
        for branch in filter(None, nested):
            yield from _states(branch["States"], in_map=True)


def _tasks() -> list[tuple[str, Any, bool]]:
    return [s for s in _states(_definition()["States"]) if s[1]["Type"] == "Task"]


def test_statemachine_passes_statelint() -> None:
    result = _statelint(ASL)
    assert result.returncode == 0, f"statelint failed:\n{result.stdout}{result.stderr}"


def test_statemachine_statelint_rejects_a_next_to_a_missing_state(tmp_path: Path) -> None:
    # Given the definition with one transition pointing nowhere
    broken = _definition()
    broken["States"]["Convert"]["Next"] = "NoSuchState"
    path = tmp_path / "broken.asl.json"
    path.write_text(json.dumps(broken))

    # When statelint checks it, Then it fails and names the missing state
    result = _statelint(path)
    assert result.returncode != 0, f"statelint accepted a broken definition:\n{result.stdout}"
    assert 'No state found named "NoSuchState"' in result.stdout + result.stderr


def test_statemachine_placeholders_match_the_template_substitutions() -> None:
    placeholders = set(re.findall(r"\$\{(\w+)\}", ASL.read_text()))
    machine = _template()["Resources"]["IngestStateMachine"]["Properties"]
    assert machine["DefinitionUri"] == "infra/statemachine/ingest.asl.json"
    substitutions = set(machine["DefinitionSubstitutions"])
    assert placeholders == substitutions, (
        f"only in the ASL: {sorted(placeholders - substitutions)}; "
        f"only in DefinitionSubstitutions: {sorted(substitutions - placeholders)}"
    )


def test_statemachine_substitutions_name_functions_of_the_template() -> None:
    template = _template()
    substitutions = template["Resources"]["IngestStateMachine"]["Properties"][
        "DefinitionSubstitutions"
    ]
    for placeholder, value in substitutions.items():
        assert value == {"Fn::GetAtt": [placeholder.removesuffix("Arn"), "Arn"]}, placeholder
        assert template["Resources"][value["Fn::GetAtt"][0]]["Type"] == (
            "AWS::Serverless::Function"
        )


def test_statemachine_every_task_retries_lambda_service_errors_with_full_jitter() -> None:
    tasks = _tasks()
    assert len(tasks) == 8
    for name, task, _ in tasks:
        retries = [r for r in task.get("Retry", []) if set(r["ErrorEquals"]) >= SERVICE_ERRORS]
        assert retries, f"{name} does not retry {sorted(SERVICE_ERRORS)}"
        assert retries[0].get("JitterStrategy") == "FULL", f"{name}: {retries[0]}"


def test_statemachine_every_step_outside_the_map_catches_failures_into_mark_failed() -> None:
    steps = [
        (name, state)
        for name, state, in_map in _states(_definition()["States"])
        if not in_map and state["Type"] in ("Task", "Map", "Parallel") and name not in NOT_CAUGHT
    ]
    assert {name for name, _ in steps} == {
        "Register",
        "Convert",
        "Chunk",
        "EmbedAndIndex",
        "Finalize",
    }
    for name, state in steps:
        catch_all = [c for c in state.get("Catch", []) if "States.ALL" in c["ErrorEquals"]]
        assert catch_all, f"{name} has no Catch for States.ALL"
        assert catch_all[-1]["Next"] == "MarkFailed", f"{name}: {catch_all[-1]}"
        assert state["Catch"][-1] is catch_all[-1], f"{name}: States.ALL must be the last Catch"
