"""What each function asks of AWS, and whether its role allows it.

`Recorder` notes every operation a botocore client makes (its `provide-client-params` event,
which presigned URLs emit too) while a named function's code runs; `authorizations` turns an
operation into the IAM actions and resource ARNs AWS authorizes it by; `Role` evaluates those
against a role's inline policies as IAM does (an explicit Deny wins, then any Allow).

moto's evaluator (moto.iam.access_control.IAMPolicy) was looked at first: it treats an Allow
whose condition is unmet as a Deny of the whole request, and reads `*` as a regex without
escaping the rest of the ARN, so it cannot judge these roles; the evaluator here is small and
exact for what IAM policies in template.yaml use.
"""

from __future__ import annotations

import fnmatch
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import botocore.session
import pytest

ACCOUNT = "123456789012"
#: Prefixes of Bedrock's cross-Region inference profiles.
PROFILE_PREFIXES = ("global.", "us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.")


@dataclass(frozen=True)
class Call:
    """One AWS API operation a function's code made (or signed, for a presigned URL)."""

    function: str
    service: str  # botocore's service name: s3, dynamodb, bedrock-runtime, ...
    operation: str
    params: Mapping[str, Any] = field(hash=False, compare=False)
    region: str
    presigned: bool = False

    def __str__(self) -> str:
        how = " (presigned)" if self.presigned else ""
        return f"{self.function}: {self.service} {self.operation}{how}"


class Recorder:
    """Records the operations of every botocore client made while it is installed, each under
    the function whose code was running; clients made inside `harness()` (the test's own) are
    not recorded. Functions run one at a time (`running` holds a lock), so a call is never
    credited to the wrong one."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.function: str | None = None
        self._quiet = False
        self._turn = threading.Lock()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = botocore.session.Session.create_client
        recorder = self

        def create_client(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = real(session, *args, **kwargs)
            if not recorder._quiet:
                region = client.meta.region_name

                def noted(params: dict[str, Any], model: Any, context: Any, **_: Any) -> None:
                    recorder._note(params, model, context, region)

                client.meta.events.register("provide-client-params", noted)
            return client

        monkeypatch.setattr(botocore.session.Session, "create_client", create_client)

    @contextmanager
    def harness(self) -> Iterator[None]:
        """Clients made here are the test's own: their calls are nobody's."""
        self._quiet, was = True, self._quiet
        try:
            yield
        finally:
            self._quiet = was

    @contextmanager
    def running(self, function: str) -> Iterator[None]:
        """Credit calls to `function` while its code runs."""
        with self._turn:
            self.function = function
            try:
                yield
            finally:
                self.function = None

    def _note(self, params: dict[str, Any], model: Any, context: Any, region: str) -> None:
        if self.function is None:
            return
        self.calls.append(
            Call(
                function=self.function,
                service=model.service_model.service_name,
                operation=model.name,
                params=dict(params),
                region=region,
                presigned=bool(context and context.get("is_presign_request")),
            )
        )


# --- operations as IAM authorizes them ---------------------------------------------------------
# The Service Authorization Reference (https://docs.aws.amazon.com/service-authorization/latest/
# reference/) names the action each API operation needs: "Actions, resources, and condition keys
# for" Amazon S3 (HeadObject -> s3:GetObject, ListObjectsV2 -> s3:ListBucket), DynamoDB, Amazon
# Bedrock (Converse -> bedrock:InvokeModel; Rerank needs bedrock:Rerank, which takes no
# resource, and bedrock:InvokeModel on the model), AWS Step Functions (service prefix `states`).
ACTIONS: dict[tuple[str, str], str] = {
    ("s3", "GetObject"): "s3:GetObject",
    ("s3", "HeadObject"): "s3:GetObject",
    ("s3", "PutObject"): "s3:PutObject",
    ("s3", "DeleteObject"): "s3:DeleteObject",
    ("s3", "ListObjectsV2"): "s3:ListBucket",
    ("dynamodb", "GetItem"): "dynamodb:GetItem",
    ("dynamodb", "PutItem"): "dynamodb:PutItem",
    ("dynamodb", "UpdateItem"): "dynamodb:UpdateItem",
    ("dynamodb", "DeleteItem"): "dynamodb:DeleteItem",
    ("dynamodb", "Query"): "dynamodb:Query",
    ("dynamodb", "Scan"): "dynamodb:Scan",
    ("bedrock-runtime", "InvokeModel"): "bedrock:InvokeModel",
    ("bedrock-runtime", "InvokeModelWithResponseStream"): "bedrock:InvokeModelWithResponseStream",
    ("bedrock-runtime", "Converse"): "bedrock:InvokeModel",
    ("bedrock-runtime", "ConverseStream"): "bedrock:InvokeModelWithResponseStream",
    ("bedrock-agent-runtime", "Rerank"): "bedrock:Rerank",
    ("bedrock", "GetFoundationModel"): "bedrock:GetFoundationModel",
    ("stepfunctions", "DescribeExecution"): "states:DescribeExecution",
    ("stepfunctions", "StartExecution"): "states:StartExecution",
    ("secretsmanager", "GetSecretValue"): "secretsmanager:GetSecretValue",
}


@dataclass(frozen=True)
class Request:
    """One IAM authorization: an action on a resource with the request's condition keys."""

    action: str
    resource: str
    context: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        keys = "".join(f" [{k}={v}]" for k, v in self.context)
        return f"{self.action} on {self.resource}{keys}"


def model_arn(model_id: str, region: str) -> str:
    """The ARN Bedrock authorizes a model id by: an inference profile or a foundation model."""
    if model_id.startswith("arn:"):
        return model_id
    if model_id.startswith(PROFILE_PREFIXES):
        return f"arn:aws:bedrock:{region}:{ACCOUNT}:inference-profile/{model_id}"
    return f"arn:aws:bedrock:{region}::foundation-model/{model_id}"


def authorizations(call: Call) -> list[Request]:
    """The authorizations AWS makes for `call`; an operation without a mapping fails the test."""
    action = ACTIONS.get((call.service, call.operation))
    if action is None:
        pytest.fail(
            f"{call} has no IAM mapping: add ({call.service!r}, {call.operation!r}) to "
            "tests/infra/iam.py ACTIONS with the action the Service Authorization Reference names"
        )
    p, region = call.params, call.region
    if call.service == "s3":
        if call.operation == "ListObjectsV2":
            prefix = str(p.get("Prefix", ""))
            return [Request(action, f"arn:aws:s3:::{p['Bucket']}", (("s3:prefix", prefix),))]
        return [Request(action, f"arn:aws:s3:::{p['Bucket']}/{p['Key']}")]
    if call.service == "dynamodb":
        return [Request(action, f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{p['TableName']}")]
    if call.service == "bedrock-runtime":
        return [Request(action, model_arn(p["modelId"], region))]
    if call.service == "bedrock-agent-runtime":
        config = p["rerankingConfiguration"]["bedrockRerankingConfiguration"]
        model = config["modelConfiguration"]["modelArn"]
        return [Request(action, "*"), Request("bedrock:InvokeModel", model)]
    if call.service == "bedrock":
        return [Request(action, model_arn(p["modelIdentifier"], region))]
    if call.service == "secretsmanager":
        # By name, the ARN is the name and six random characters Secrets Manager adds.
        secret = str(p["SecretId"])
        arn = f"arn:aws:secretsmanager:{region}:{ACCOUNT}:secret:{secret}-AbCdEf"
        return [Request(action, secret if secret.startswith("arn:") else arn)]
    if call.operation == "DescribeExecution":
        return [Request(action, p["executionArn"])]
    return [Request(action, p["stateMachineArn"])]


# --- evaluating a role's policies --------------------------------------------------------------
def _matches(patterns: Any, value: str, *, ignore_case: bool) -> bool:
    """IAM's wildcards: `*` any run of characters, `?` one character; nothing else special."""
    for pattern in patterns if isinstance(patterns, list) else [patterns]:
        regex = re.escape(str(pattern)).replace(r"\*", ".*").replace(r"\?", ".")
        if re.fullmatch(regex, value, re.IGNORECASE if ignore_case else 0):
            return True
    return False


_CONDITIONS = {
    "StringEquals": lambda wanted, value: value in wanted,
    "StringLike": lambda wanted, value: any(fnmatch.fnmatchcase(value, w) for w in wanted),
}


def _conditions_hold(conditions: Mapping[str, Any], context: Mapping[str, str]) -> bool:
    for operator, keys in conditions.items():
        if operator not in _CONDITIONS:
            pytest.fail(f"condition operator {operator} is not evaluated here: add it")
        for key, wanted in keys.items():
            values = wanted if isinstance(wanted, list) else [wanted]
            # A key the request does not carry fails the condition (no ...IfExists here).
            if key not in context or not _CONDITIONS[operator](values, context[key]):
                return False
    return True


@dataclass
class Statement:
    effect: str
    actions: Any
    not_actions: Any
    resources: Any
    not_resources: Any
    conditions: Mapping[str, Any]

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Statement:
        return cls(
            raw["Effect"],
            raw.get("Action"),
            raw.get("NotAction"),
            raw.get("Resource"),
            raw.get("NotResource"),
            raw.get("Condition", {}),
        )

    def applies(self, request: Request) -> bool:
        if self.actions is not None:
            acted = _matches(self.actions, request.action, ignore_case=True)
        else:
            acted = not _matches(self.not_actions, request.action, ignore_case=True)
        if self.resources is not None:
            placed = _matches(self.resources, request.resource, ignore_case=False)
        else:
            placed = not _matches(self.not_resources, request.resource, ignore_case=False)
        return acted and placed and _conditions_hold(self.conditions, dict(request.context))

    def granted(self) -> list[str]:
        """The actions an Allow names (NotAction grants are reported as such)."""
        if self.actions is None:
            return [f"NotAction {self.not_actions}"]
        return list(self.actions) if isinstance(self.actions, list) else [self.actions]


@dataclass
class Role:
    """A role's inline policies, resolved (its managed policies are the runtime's: logs, X-Ray)."""

    name: str
    statements: list[Statement]

    @classmethod
    def of(cls, name: str, properties: Mapping[str, Any]) -> Role:
        statements = []
        for policy in properties.get("Policies", []):
            raw = policy["PolicyDocument"]["Statement"]
            statements += [Statement.of(s) for s in (raw if isinstance(raw, list) else [raw])]
        return cls(name, statements)

    def allows(self, request: Request) -> bool:
        applying = [s for s in self.statements if s.applies(request)]
        if any(s.effect == "Deny" for s in applying):
            return False
        return any(s.effect == "Allow" for s in applying)
