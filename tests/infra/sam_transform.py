"""Run by SAM CLI's own Python: translate template.yaml as `sam deploy` would, print JSON.

`sam validate --lint` accepts some templates the translator later refuses at deploy time
(a non-literal DefaultAuthorizer, say); translating finds those here, offline.
"""

import json
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def main(path: str, parameters: str) -> None:
    with open(path) as file:
        template = yaml_parse(file.read())
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri", "DefinitionUri"):
            if key in properties:  # `sam package` would have uploaded these
                properties[key] = "s3://packaged-artifacts/key"
        if properties.get("PackageType") == "Image":  # `sam deploy` would have pushed it
            properties["ImageUri"] = "123456789012.dkr.ecr.us-east-1.amazonaws.com/docchat:ocr"
    translated = transform(template, json.loads(parameters), _NoManagedPolicies())
    json.dump(translated, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
