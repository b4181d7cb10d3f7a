"""Secrets in AWS Secrets Manager: the credentials a stack's sources sync with, read by name when
a sync starts. Neither a value nor AWS's own message about one is ever put in an error, and no
log record holds one (docchat.adapters.redaction), even botocore's at DEBUG."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from docchat.adapters.redaction import hide, install
from docchat.errors import SecretError

_MISSING = frozenset({"ResourceNotFoundException"})
_DENIED = frozenset({"AccessDeniedException", "AccessDenied"})
#: A secret marked for deletion, or one whose KMS key this role may not use.
_UNUSABLE = frozenset({"InvalidRequestException", "DecryptionFailure"})


class SecretsManagerSecrets:
    """Reads secrets through one boto3 Secrets Manager client."""

    def __init__(self, client: Any) -> None:
        self._client = client
        # Before the first GetSecretValue: at DEBUG botocore logs its answer's body.
        install()

    def secret(self, name: str) -> str:
        """The secret's SecretString (its current version), or SecretError saying what to fix."""
        try:
            answer = self._client.get_secret_value(SecretId=name)
        except ClientError as exc:
            raise SecretError(_reason(name, exc)) from None
        text = answer.get("SecretString")
        if not isinstance(text, str) or not text.strip():
            raise SecretError(
                f"the secret {name} in Secrets Manager holds no text: store the credential as "
                f"its secret string (aws secretsmanager put-secret-value --secret-id {name} "
                "--secret-string ...)"
            )
        hide(text.strip())
        return text.strip()


def _reason(name: str, exc: ClientError) -> str:
    code = str(exc.response.get("Error", {}).get("Code", ""))
    if code in _MISSING:
        return (
            f"the secret {name} does not exist in Secrets Manager: create it "
            f"(aws secretsmanager create-secret --name {name} --secret-string ...) in the "
            "stack's Region and account"
        )
    if code in _DENIED:
        return (
            f"Secrets Manager refused to give the secret {name} to the sync function "
            f"({code}): name it under docchat/ (the only secrets the function may read), and "
            "if it is encrypted with your own KMS key, allow the function's role to decrypt"
        )
    if code in _UNUSABLE:
        return (
            f"the secret {name} cannot be read ({code}): restore it if it is scheduled for "
            "deletion, or check its KMS key"
        )
    return f"Secrets Manager failed reading the secret {name} ({code or 'no code'}): sync again"
