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

import jsonata
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
NOT_CAUGHT = {"MarkFailed", "RecordRemoveFailure"}
# The second sweeps after the search index's visibility delay: the document's state is already
# recorded, so a failure there ends the run as failed without touching the registry.
SWEEPS = {"SweepAfterFinalize", "SweepAfterRemove", "SweepAfterFailure"}
EVENTS = REPO / "events" / "eventbridge"


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
    assert len(tasks) == 14  # with the OCR map's task and Convert's second run
    for name, task, _ in tasks:
        retries = [r for r in task.get("Retry", []) if set(r["ErrorEquals"]) >= SERVICE_ERRORS]
        assert retries, f"{name} does not retry {sorted(SERVICE_ERRORS)}"
        assert retries[0].get("JitterStrategy") == "FULL", f"{name}: {retries[0]}"


def test_statemachine_conversion_out_of_memory_or_time_is_retried_at_most_once() -> None:
    # A conversion or OCR that ran out of memory or time would fail the same way again: Lambda
    # reports it as Runtime.ExitError (the sandbox killed), Lambda.Unknown, Sandbox.Timedout or
    # Runtime.OutOfMemory, and a retry costs another full run of the function.
    stopped = {"Runtime.ExitError", "Lambda.Unknown", "Sandbox.Timedout", "Runtime.OutOfMemory"}
    conversions = {"Convert", "ConvertWithOcr", "Ocr"}
    found = {name: task for name, task, _ in _tasks() if name in conversions}
    assert set(found) == conversions
    for name, task in found.items():
        for retry in task.get("Retry", []):
            caught = set(retry["ErrorEquals"]) & (stopped | {"States.ALL", "States.TaskFailed"})
            if caught:
                assert retry["MaxAttempts"] <= 1, f"{name} retries {sorted(caught)}: {retry}"


def test_statemachine_every_step_outside_the_map_catches_failures_into_mark_failed() -> None:
    steps = [
        (name, state)
        for name, state, in_map in _states(_definition()["States"])
        if not in_map
        and state["Type"] in ("Task", "Map", "Parallel")
        and name not in NOT_CAUGHT | SWEEPS | {"Remove"}
    ]
    assert {name for name, _ in steps} == {
        "Register",
        "Convert",
        "OcrPages",
        "ConvertWithOcr",
        "Chunk",
        "EmbedAndIndex",
        "Finalize",
    }
    for name, state in steps:
        catch_all = [c for c in state.get("Catch", []) if "States.ALL" in c["ErrorEquals"]]
        assert catch_all, f"{name} has no Catch for States.ALL"
        assert catch_all[-1]["Next"] == "MarkFailed", f"{name}: {catch_all[-1]}"
        assert state["Catch"][-1] is catch_all[-1], f"{name}: States.ALL must be the last Catch"


def _jsonata(expression: str, **states: Any) -> Any:
    """Evaluate a `{% ... %}` expression of the definition as Step Functions would, with
    `$states` bound to `states`."""
    assert expression.startswith("{%") and expression.endswith("%}"), expression
    return jsonata.Jsonata(expression[2:-2].strip()).evaluate(None, {"states": states})


def _route(event: dict[str, Any]) -> str:
    route = _definition()["States"]["Route"]
    for choice in route["Choices"]:
        if _jsonata(choice["Condition"], input=event):
            return str(choice["Next"])
    return str(route["Default"])


def test_statemachine_routes_every_documented_s3_event() -> None:
    routes = {
        path.stem: _route(json.loads(path.read_text()))
        for path in sorted(EVENTS.glob("*.json"))
        if json.loads(path.read_text())["source"] == "aws.s3"
    }

    assert routes == {
        "object-created": "Register",
        "object-deleted-delete-marker": "Remove",
        "object-deleted-permanently": "Remove",  # Remove checks whether the key is still there
        "lifecycle-expired-current": "Remove",
        "lifecycle-expired-noncurrent": "NoncurrentVersionExpired",
    }
    assert _definition()["States"]["NoncurrentVersionExpired"]["Type"] == "Succeed"


def test_statemachine_remove_hands_a_present_key_to_register_and_sweeps_a_removal() -> None:
    after = _definition()["States"]["AfterRemove"]

    def route(status: str) -> str:
        choices = after["Choices"]
        taken = [c["Next"] for c in choices if _jsonata(c["Condition"], input={"status": status})]
        return str(taken[0] if taken else after["Default"])

    nexts = {status: route(status) for status in ("present", "removed", "kept")}
    assert nexts == {"present": "Register", "removed": "SettleAfterRemove", "kept": "Kept"}


def test_statemachine_map_collects_far_under_the_payload_limit_for_2000_batches() -> None:
    # Given what the Index Lambda returns for one batch (a BatchResult, ~450 bytes) ...
    doc = json.loads((REPO / "events" / "index.json").read_text())["doc"]
    batch_key = f"artifacts/{doc['doc_id']}/{doc['version']}/chunks/01999.json"
    payload = {"doc": doc, "batch_key": batch_key, "chunks": 64}
    result = {"ExecutedVersion": "$LATEST", "Payload": payload, "StatusCode": 200}
    assert len(json.dumps(payload)) > 400
    # ... when the Map's iteration ends with the definition's own Index state
    iteration = _definition()["States"]["EmbedAndIndex"]["ItemProcessor"]["States"]
    last = next(s for s in iteration.values() if s.get("End"))
    output = last.get("Output", "{% $states.result %}")
    value = _jsonata(output, input=payload, result=result) if isinstance(output, str) else output

    # Then the Map's collected result for 2,000 batches stays far under 256 KiB
    collected = json.dumps([value] * 2000, separators=(",", ":"))
    assert len(collected.encode()) < 16 * 1024, f"{len(collected.encode())} bytes"


def test_statemachine_waits_before_each_second_sweep() -> None:
    states = _definition()["States"]
    for sweep in SWEEPS:
        [wait] = [n for n, s in states.items() if s.get("Next") == sweep]
        assert states[wait]["Type"] == "Wait", wait
        assert states[wait]["Seconds"] >= 60, wait  # the test fixture cuts it short
    assert states["Finalize"]["Next"] == "SettleAfterFinalize"
    assert states["SweepAfterFinalize"]["Arguments"]["FunctionName"] == "${FinalizeFunctionArn}"
    assert states["SweepAfterRemove"]["Arguments"]["FunctionName"] == "${RemoveFunctionArn}"
    assert states["SweepAfterFailure"]["Arguments"]["FunctionName"] == "${MarkFailedFunctionArn}"


def test_statemachine_remove_failures_are_recorded() -> None:
    states = _definition()["States"]
    [catch] = states["Remove"]["Catch"]
    assert catch["ErrorEquals"] == ["States.ALL"]
    record = states[catch["Next"]]
    assert record["Arguments"]["FunctionName"] == "${MarkFailedFunctionArn}"
    assert record["Next"] == "Failed"
