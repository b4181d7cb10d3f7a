"""An opensearch-py client for an endpoint: SigV4-signed for AWS, plain for a local cluster."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import boto3
from opensearchpy import OpenSearch, Urllib3AWSV4SignerAuth, Urllib3HttpConnection

from docchat.adapters.opensearch_index.failures import RETRYABLE_STATUSES
from docchat.errors import ConfigError

#: Seconds each request may take: a collection waking from zero answers after 10-30 s.
REQUEST_TIMEOUT_S = 60
_SERVICES = ("aoss", "es")


def client_for(endpoint: str, *, region: str, service: str) -> OpenSearch:
    """A client for `endpoint`: SigV4-signed HTTPS (service "aoss" or "es"), or plain http://."""
    url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError(
            f"OpenSearch endpoint {endpoint!r} is not a URL: give https://<host> "
            "(or http://127.0.0.1:9200 for a local cluster)"
        )
    # A request may wait out a waking collection; a timed-out one is not repeated here, where
    # it would take as long again (and Serverless bulk writes are not idempotent): searches
    # retry within their own deadline, ingestion steps in the state machine.
    options: dict[str, Any] = {
        "connection_class": Urllib3HttpConnection,
        "timeout": REQUEST_TIMEOUT_S,
        "max_retries": 3,
        "retry_on_status": RETRYABLE_STATUSES,
        "retry_on_timeout": False,
    }
    if url.scheme == "http":
        return OpenSearch(hosts=[{"host": url.hostname, "port": url.port or 9200}], **options)
    if service not in _SERVICES:
        raise ConfigError(
            f"OpenSearch service {service!r} is unknown: use 'aoss' for Serverless "
            "collections or 'es' for managed domains"
        )
    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise ConfigError(
            "no AWS credentials to sign OpenSearch requests: run with a role, or set "
            "AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
        )
    return OpenSearch(
        hosts=[{"host": url.hostname, "port": url.port or 443}],
        http_auth=Urllib3AWSV4SignerAuth(credentials, region, service),
        use_ssl=True,
        verify_certs=True,
        **options,
    )
