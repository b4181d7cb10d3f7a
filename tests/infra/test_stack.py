"""The stack as CloudFormation would deploy it: the SAM-translated template with its intrinsic
functions resolved (tests/infra/intrinsics.py) for given parameters and a given stack name."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest
from cfnlint.schema.manager import PROVIDER_SCHEMA_MANAGER

from docchat.config import Settings
from docchat.processes import FUNCTIONS
from tests.conftest import REPO
from tests.infra.intrinsics import Stack
from tests.infra.test_sam_transform import _translate

LONG_MIXED_CASE = "Team-Docchat-Production-Stack-For-Research-PDFs-2026"


@cache
def _translated(parameters: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    return _translate(**dict(parameters))


def _stack(name: str = "docchat", **parameters: str) -> Stack:
    return Stack(_translated(tuple(sorted(parameters.items()))), parameters, name=name)


def _schema_property(kind: str, prop: str) -> dict[str, Any]:
    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", kind).schema
    found: dict[str, Any] = schema["properties"][prop]
    return found


def _statements(resources: dict[str, Any], role: str) -> list[dict[str, Any]]:
    policies = resources[role]["Properties"].get("Policies", [])
    return [s for p in policies for s in p["PolicyDocument"]["Statement"]]


def _allowed(resources: dict[str, Any], role: str, action: str) -> list[Any]:
    """Resources `role` may do `action` on (each statement's list, flattened)."""
    found: list[Any] = []
    for statement in _statements(resources, role):
        actions = statement["Action"]
        if action in ([actions] if isinstance(actions, str) else actions):
            resource = statement["Resource"]
            found += resource if isinstance(resource, list) else [resource]
    return found


# --- names (defect 10) -------------------------------------------------------------------------


def test_stack_names_fit_opensearch_serverless_for_a_long_mixed_case_stack_name() -> None:
    # Given a stack name with capitals, longer than 32 characters
    resources = _stack(LONG_MIXED_CASE).resources()

    # Then every collection, group and policy name matches the pattern AWS validates it with
    kinds = {
        "AWS::OpenSearchServerless::Collection": "Name",
        "AWS::OpenSearchServerless::CollectionGroup": "Name",
        "AWS::OpenSearchServerless::SecurityPolicy": "Name",
        "AWS::OpenSearchServerless::AccessPolicy": "Name",
    }
    names = {}
    for logical, resource in resources.items():
        if resource["Type"] in kinds:
            spec = _schema_property(resource["Type"], kinds[resource["Type"]])
            name = resource["Properties"]["Name"]
            assert re.fullmatch(spec["pattern"], name), (logical, name, spec["pattern"])
            assert spec["minLength"] <= len(name) <= min(spec["maxLength"], 32), (logical, name)
            names[logical] = name
    assert len(names) == 5, names
    # ... and the policies name the collection that is created
    collection = resources["VectorCollection"]["Properties"]["Name"]
    assert resources["VectorCollection"]["Properties"]["CollectionGroupName"] == collection
    for logical in ("CollectionEncryptionPolicy", "CollectionNetworkPolicy"):
        rules = json.loads(resources[logical]["Properties"]["Policy"])
        rules = rules if isinstance(rules, list) else [rules]
        assert rules[0]["Rules"][0]["Resource"] == [f"collection/{collection}"], logical
    access = json.loads(resources["CollectionAccessPolicy"]["Properties"]["Policy"])
    assert access[0]["Rules"][0]["Resource"] == [f"index/{collection}/*"]


def test_stack_names_differ_between_stacks() -> None:
    first = _stack(LONG_MIXED_CASE).resources()["VectorCollection"]["Properties"]["Name"]
    other = Stack(
        _translated(), name=LONG_MIXED_CASE, stack_uuid="8d1e2f30-aa1b-11f0-9c3d-0a1b2c3d4e5f"
    )
    second = other.resources()["VectorCollection"]["Properties"]["Name"]
    assert first != second


# --- idle cost: NextGen collection group with a minimum of 0 OCU --------------------------------


def test_stack_default_collection_is_nextgen_scaling_to_zero() -> None:
    resources = _stack().resources()

    group = resources["CollectionGroup"]["Properties"]
    assert group["Generation"] == "NEXTGEN"
    limits = group["CapacityLimits"]
    assert (limits["MinIndexingCapacityInOcu"], limits["MinSearchCapacityInOcu"]) == (0, 0)
    assert resources["VectorCollection"]["Properties"]["CollectionGroupName"] == group["Name"]


def test_stack_nextgen_group_and_collection_have_standby_replicas_whatever_the_parameter() -> None:
    # OpenSearch refuses a NEXTGEN collection group with StandbyReplicas DISABLED: the default
    # deploy (NEXTGEN, CollectionStandbyReplicas=DISABLED) rolled back.
    for standby in ("DISABLED", "ENABLED"):
        resources = _stack(CollectionStandbyReplicas=standby).resources()
        assert resources["CollectionGroup"]["Properties"]["StandbyReplicas"] == "ENABLED"
        assert resources["VectorCollection"]["Properties"]["StandbyReplicas"] == "ENABLED"
    classic = _stack(CollectionGeneration="CLASSIC", CollectionStandbyReplicas="ENABLED")
    assert classic.resources()["VectorCollection"]["Properties"]["StandbyReplicas"] == "ENABLED"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"CollectionGeneration": "NEXTGEN"}, {"CollectionGeneration": "CLASSIC"}),
        ({"CollectionGeneration": "CLASSIC"}, {"CollectionGeneration": "NEXTGEN"}),
        (
            {"CollectionGeneration": "CLASSIC", "CollectionStandbyReplicas": "DISABLED"},
            {"CollectionGeneration": "CLASSIC", "CollectionStandbyReplicas": "ENABLED"},
        ),
    ],
)
def test_stack_a_change_that_replaces_the_collection_renames_it(
    before: dict[str, str], after: dict[str, str]
) -> None:
    # A collection's StandbyReplicas and CollectionGroupName (its generation) are create-only:
    # CloudFormation replaces it, which it refuses for a custom-named resource under the same
    # name ("cannot update a stack when a custom-named resource requires replacing").
    old = _stack(**before).resources()
    new = _stack(**after).resources()
    for logical in (
        "VectorCollection",
        "CollectionEncryptionPolicy",
        "CollectionNetworkPolicy",
        "CollectionAccessPolicy",
    ):
        assert old[logical]["Properties"]["Name"] != new[logical]["Properties"]["Name"], logical


def test_stack_classic_collection_keeps_the_name_it_had() -> None:
    # Stacks deployed before names said the generation ran CLASSIC without standby replicas
    # (the NEXTGEN default could not deploy): their collection keeps its name and its index.
    stack = _stack(CollectionGeneration="CLASSIC")
    name = stack.resources()["VectorCollection"]["Properties"]["Name"]
    assert re.fullmatch(r"docchat-[0-9a-f]{8}", name), name


def test_stack_arns_name_the_partition() -> None:
    # Literal "arn:aws:" breaks the stack in aws-cn and aws-us-gov.
    text = (REPO / "template.yaml").read_text()
    assert "arn:aws:" not in text.replace("arn:aws[a-z-]*:", ""), [
        line.strip() for line in text.splitlines() if "arn:aws:" in line
    ]


def test_stack_watchdog_may_ask_why_an_ingestion_run_failed() -> None:
    stack = _stack()
    resources = stack.resources()
    machine = resources["IngestStateMachine"]["Properties"].get("StateMachineName") or (
        stack.resolve({"Fn::GetAtt": ["IngestStateMachine", "Name"]})
    )
    allowed = _allowed(resources, "WatchdogFunctionRole", "states:DescribeExecution")
    assert allowed == [f"arn:aws:states:us-east-1:123456789012:execution:{machine}:*"], allowed


def test_stack_classic_collection_has_no_group() -> None:
    resources = _stack(CollectionGeneration="CLASSIC").resources()

    assert "CollectionGroup" not in resources
    assert "CollectionGroupName" not in resources["VectorCollection"]["Properties"]


# --- an existing OpenSearch endpoint (defect 6) --------------------------------------------------


def _rule_holds(stack: Stack) -> bool:
    """Whether every applicable CloudFormation Rules assertion holds for the stack's parameters."""
    for rule in stack.template.get("Rules", {}).values():
        if "RuleCondition" in rule and not stack.resolve(rule["RuleCondition"]):
            continue
        if not all(stack.resolve(a["Assert"]) for a in rule["Assertions"]):
            return False
    return True


def test_stack_existing_endpoint_without_its_arn_fails_at_deploy() -> None:
    endpoint = "https://search-docs-abc123.us-east-1.es.amazonaws.com"
    arn = "arn:aws:es:us-east-1:123456789012:domain/docs"

    assert _rule_holds(_stack())
    assert not _rule_holds(
        _stack(ExistingOpenSearchEndpoint=endpoint, ExistingOpenSearchService="es")
    )
    assert _rule_holds(
        _stack(
            ExistingOpenSearchEndpoint=endpoint,
            ExistingOpenSearchArn=arn,
            ExistingOpenSearchService="es",
        )
    )


def test_stack_existing_domain_grants_http_on_its_index_paths() -> None:
    arn = "arn:aws:es:us-east-1:123456789012:domain/docs"
    resources = _stack(
        ExistingOpenSearchEndpoint="https://search-docs-abc123.us-east-1.es.amazonaws.com",
        ExistingOpenSearchArn=arn,
        ExistingOpenSearchService="es",
    ).resources()

    roles = [
        "IndexFunctionRole",
        "FinalizeFunctionRole",
        "MarkFailedFunctionRole",
        "RemoveFunctionRole",
        "WatchdogFunctionRole",
    ]
    for role in roles:
        for action in ("es:ESHttpGet", "es:ESHttpPost", "es:ESHttpPut"):
            assert f"{arn}/*" in _allowed(resources, role, action), (role, action)
    # The chat function only searches and counts (tests/infra/test_role_coverage.py).
    for action in ("es:ESHttpGet", "es:ESHttpPost"):
        assert f"{arn}/*" in _allowed(resources, "ChatFunctionRole", action), action
    assert _allowed(resources, "ChatFunctionRole", "es:ESHttpPut") == []
    assert "VectorCollection" not in resources


# --- S3 ListBucket (defect 5) --------------------------------------------------------------------


@pytest.mark.parametrize(
    "role",
    ["RegisterFunctionRole", "ConvertFunctionRole", "OcrFunctionRole", "RemoveFunctionRole"],
)
def test_stack_functions_reading_documents_may_list_the_bucket(role: str) -> None:
    resources = _stack().resources()

    assert "<DocumentsBucket.Arn>" in _allowed(resources, role, "s3:ListBucket")
    assert "<DocumentsBucket.Arn>/*" in _allowed(resources, role, "s3:GetObject")


# --- item 13: logs, failed events, Bedrock scope -------------------------------------------------


def test_stack_every_function_logs_to_a_group_with_retention() -> None:
    resources = _stack(LogRetentionDays="14").resources()
    functions = {n: r for n, r in resources.items() if r["Type"] == "AWS::Lambda::Function"}

    assert len(functions) == 12  # nine steps, the watchdog, the sync, the chat
    for name, function in functions.items():
        group = function["Properties"]["LoggingConfig"]["LogGroup"]
        assert group.startswith("<") and group.endswith(">"), (name, group)
        log_group = resources[group[1:-1]]
        assert log_group["Type"] == "AWS::Logs::LogGroup"
        assert log_group["Properties"]["RetentionInDays"] == "14", name
        assert function["Properties"]["LoggingConfig"]["LogFormat"] == "JSON", name


def test_stack_failed_events_are_kept() -> None:
    resources = _stack().resources()

    config = resources["WatchdogFunctionEventInvokeConfig"]["Properties"]
    assert config["DestinationConfig"]["OnFailure"]["Destination"] == "<FailedEventsQueue.Arn>"
    rules = [r for r in resources.values() if r["Type"] == "AWS::Events::Rule"]
    assert len(rules) == 2
    for rule in rules:
        [target] = rule["Properties"]["Targets"]
        assert target["DeadLetterConfig"]["Arn"] == "<FailedEventsQueue.Arn>"
    queue_policy = resources["FailedEventsQueuePolicy"]["Properties"]["PolicyDocument"]
    [allow] = [s for s in queue_policy["Statement"] if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "events.amazonaws.com"}


def test_stack_chat_may_invoke_only_its_claude_model_through_its_profile() -> None:
    resources = _stack(ChatModelId="eu.anthropic.claude-sonnet-4-6", LogRetentionDays="30")
    resolved = resources.resources()
    profile = (
        "arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-6"
    )

    statements = [
        s
        for s in _statements(resolved, "ChatFunctionRole")
        if "bedrock:InvokeModelWithResponseStream" in s["Action"]
    ]
    resources_of = [
        r
        for s in statements
        for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    ]
    assert not [r for r in resources_of if r.endswith("foundation-model/*")]
    assert profile in resources_of
    models = [r for r in resources_of if "foundation-model/" in r]
    assert models == [
        "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-6",
        "arn:aws:bedrock:::foundation-model/anthropic.claude-sonnet-4-6",
    ]
    [scoped] = [s for s in statements if "Condition" in s]
    assert scoped["Condition"] == {"StringEquals": {"bedrock:InferenceProfileArn": profile}}


def test_stack_default_chat_model_is_a_global_claude_profile() -> None:
    stack = _stack()
    model = stack.values["ChatModelId"]
    pattern = stack.template["Parameters"]["ChatModelId"]["AllowedPattern"]

    # global. is the inference profile every commercial Region can call
    assert model == "global.anthropic.claude-sonnet-4-6"
    assert re.fullmatch(pattern, model)
    assert not re.fullmatch(pattern, "anthropic.claude-sonnet-4-6")  # no on-demand model ids


# --- issue 15: the viewer reads a document through a presigned GET ------------------------------


def test_stack_chat_may_presign_reads_of_documents_for_the_viewer() -> None:
    resources = _stack().resources()

    # A presigned URL carries the signer's permissions: the chat role must read the objects.
    assert "<DocumentsBucket.Arn>/*" in _allowed(resources, "ChatFunctionRole", "s3:GetObject")
    # https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html: the page's fetch of the
    # PDF is cross-origin, so the bucket's CORS rules must allow GET.
    rules = resources["DocumentsBucket"]["Properties"]["CorsConfiguration"]["CorsRules"]
    assert any("GET" in rule["AllowedMethods"] for rule in rules), rules


# --- cloud OCR (issue 13) ----------------------------------------------------------------------


def test_stack_ocr_function_reads_documents_and_writes_only_ocr_results() -> None:
    resources = _stack().resources()
    role = "OcrFunctionRole"

    actions = sorted(
        action
        for statement in _statements(resources, role)
        for action in (
            [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        )
    )
    assert actions == ["s3:GetObject", "s3:ListBucket", "s3:PutObject"]
    assert _allowed(resources, role, "s3:GetObject") == ["<DocumentsBucket.Arn>/*"]
    assert _allowed(resources, role, "s3:PutObject") == ["<ArtifactsBucket.Arn>/artifacts/*/ocr/*"]
    # Convert reads those results on its second run
    assert "<ArtifactsBucket.Arn>/artifacts/*/ocr/*" in _allowed(
        resources, "ConvertFunctionRole", "s3:GetObject"
    )


def test_stack_ocr_function_is_an_arm64_image_with_room_for_a_range_of_pages() -> None:
    function = _stack().resources()["OcrFunction"]["Properties"]

    assert function["PackageType"] == "Image"
    assert function["Architectures"] == ["arm64"]
    assert "Layers" not in function and "Runtime" not in function
    assert (function["MemorySize"], function["Timeout"]) == (3008, 900)
    variables = function["Environment"]["Variables"]
    # The child process's deadline ends before Lambda's: a typed timeout, not a killed sandbox
    assert float(variables["DOCCHAT_CONVERT_TIMEOUT_S"]) < 900


# --- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("auth", ["COGNITO", "NONE"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_stack_sets_each_function_the_settings_it_cannot_run_without(name: str, auth: str) -> None:
    # Given the function's resource as deployed (a stack with its own collection)
    resource = "".join(part.title() for part in name.split("_")) + "Function"
    variables = _stack(ApiAuth=auth).resources()[resource]["Properties"]["Environment"]["Variables"]

    # Then every variable its view requires is set, and each DOCCHAT_ one is a setting
    missing = [v for v in FUNCTIONS[name].required() if not variables.get(f"DOCCHAT_{v.upper()}")]
    assert missing == [], resource
    unknown = {v for v in variables if v.startswith("DOCCHAT_")} - {
        f"DOCCHAT_{n.upper()}" for n in Settings.model_fields
    }
    assert unknown == set(), resource


def test_stack_sync_lease_outlasts_the_longest_sync_run() -> None:
    # A lease younger than the function's timeout may be a live run's: only an older one is
    # taken over (docchat.sources.lease), so the lease must outlast the timeout.
    from docchat.sources.lease import LEASE_S

    function = _stack().resources()["SyncFunction"]["Properties"]

    assert int(function["Timeout"]) < LEASE_S
