"""The ingestion runs in Step Functions: why one stopped (DescribeExecution)."""

from __future__ import annotations

from typing import Any

from docchat.payloads import ExecutionFailure


class StepFunctionsExecutions:
    def __init__(self, client: Any) -> None:
        self._client = client  # a boto3 Step Functions client

    def failure(self, execution_arn: str) -> ExecutionFailure:
        """The run's input and the error and cause that stopped it
        (https://docs.aws.amazon.com/step-functions/latest/apireference/API_DescribeExecution.html)."""
        described = self._client.describe_execution(executionArn=execution_arn)
        return ExecutionFailure(
            input=described.get("input") or "",
            error=described.get("error") or "",
            cause=described.get("cause") or "",
        )
