"""A small evaluator of CloudFormation intrinsic functions, to read a translated template with
given parameters and stack identity the way CloudFormation would resolve it at deploy time.

Covers what template.yaml uses: Ref, Fn::GetAtt (resolved to a placeholder "<Name.Attr>"),
Fn::FindInMap, Fn::Join, Fn::Select, Fn::Split, Fn::Sub, Fn::If, Fn::Equals, Fn::Not, Fn::And,
Fn::Or, Condition. https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference.html
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

NO_VALUE = object()


@dataclass
class Stack:
    """A template as deployed: its parameters (defaults overridden) and pseudo parameters."""

    template: dict[str, Any]
    parameters: dict[str, str] = field(default_factory=dict)
    name: str = "docchat"
    region: str = "us-east-1"
    account: str = "123456789012"
    stack_uuid: str = "1c2fa620-982a-11e3-aff7-50e2416294e0"
    # Values of resources (`Name`) and attributes (`Name.Attr`) as deployed; others resolve to
    # the placeholder "<Name>" / "<Name.Attr>".
    known: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        defaults = {
            name: str(spec.get("Default", ""))
            for name, spec in self.template.get("Parameters", {}).items()
        }
        self.values = {**defaults, **self.parameters}
        self.pseudo = {
            "AWS::StackName": self.name,
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{self.account}:stack/"
            f"{self.name}/{self.stack_uuid}",
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.template["Conditions"][name]))

    def resources(self) -> dict[str, dict[str, Any]]:
        """Resources that exist with these parameters, their properties resolved."""
        found = {}
        for name, resource in self.template["Resources"].items():
            if "Condition" in resource and not self.condition(resource["Condition"]):
                continue
            found[name] = {**resource, "Properties": self.resolve(resource.get("Properties", {}))}
        return found

    def resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self.resolve(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg) = next(iter(node.items()))
            if key == "Ref":
                return self._ref(arg)
            if key == "Condition":
                return self.condition(arg)
            if key.startswith("Fn::"):
                return getattr(self, "_" + key[4:].lower())(arg)
        resolved = {k: self.resolve(v) for k, v in node.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.values:
            return self.values[name]
        return self.known.get(name, f"<{name}>")

    def _getatt(self, arg: Any) -> str:
        parts = arg.split(".", 1) if isinstance(arg, str) else arg
        name = f"{parts[0]}.{parts[1]}"
        return self.known.get(name, f"<{name}>")

    def _findinmap(self, arg: list[Any]) -> Any:
        mapping, top, second = (self.resolve(a) for a in arg)
        return self.template["Mappings"][mapping][top][second]

    def _join(self, arg: list[Any]) -> str:
        separator, values = arg
        return str(separator).join(str(v) for v in self.resolve(values))

    def _select(self, arg: list[Any]) -> Any:
        index, values = arg
        return self.resolve(values)[int(self.resolve(index))]

    def _split(self, arg: list[Any]) -> list[str]:
        separator, value = arg
        return str(self.resolve(value)).split(separator)

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else arg
        names = {k: self.resolve(v) for k, v in variables.items()}

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in names:
                return str(names[name])
            if "." in name:
                return self._getatt(name)
            return str(self._ref(name))

        return re.sub(r"\$\{([^}!]+)\}", value, text)

    def _if(self, arg: list[Any]) -> Any:
        name, then, otherwise = arg
        return self.resolve(then if self.condition(name) else otherwise)

    def _equals(self, arg: list[Any]) -> bool:
        left, right = (self.resolve(v) for v in arg)
        return str(left) == str(right)

    def _not(self, arg: list[Any]) -> bool:
        return not self.resolve(arg[0])

    def _and(self, arg: list[Any]) -> bool:
        return all(self.resolve(v) for v in arg)

    def _or(self, arg: list[Any]) -> bool:
        return any(self.resolve(v) for v in arg)
