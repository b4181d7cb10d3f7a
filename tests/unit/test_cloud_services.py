"""The Lambdas' wiring: no OpenSearch request while the chat Lambda starts, and no index
without an OpenSearch endpoint."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

import pytest

from docchat.errors import ConfigError
from docchat.processes import EmbedSettings, SearchIndex
from docchat.wiring.cloud import CloudServices
from tests.conftest import fresh_python


def test_cloud_index_is_built_without_a_request_to_opensearch() -> None:
    # Given an OpenSearch endpoint that counts the connections it is sent (a sleeping
    # NextGen collection answers its first request only after 10-30 s)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    connections: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            connections.append(listener.accept()[0])

    watcher = threading.Thread(target=accept)
    watcher.start()
    host, port = listener.getsockname()
    settings = SearchIndex.from_env(
        {
            "DOCCHAT_OPENSEARCH_ENDPOINT": f"http://{host}:{port}",
            "DOCCHAT_OPENSEARCH_SERVICE": "es",
            "DOCCHAT_EMBEDDER": "titan",
            "DOCCHAT_REGION": "us-east-1",
        },
        reader="the search index",
    )

    # When the index adapter is built, as the chat backend builds it at a cold start
    index = CloudServices(settings).index

    # Then nothing reached OpenSearch: the first search will, where a wake is announced
    watcher.join()
    listener.close()
    for connection in connections:
        connection.close()
    assert index.index_name.startswith("docchat-chunks")
    assert connections == []


def test_cloud_index_without_an_endpoint_is_a_config_error_not_sqlite(tmp_path: Path) -> None:
    # Given a Lambda's settings with DOCCHAT_OPENSEARCH_ENDPOINT empty
    environ = {"DOCCHAT_OPENSEARCH_ENDPOINT": "", "DOCCHAT_DATA_DIR": str(tmp_path)}

    # When the index's settings are read, Then they fail naming the variable, and no SQLite
    # file appears
    with pytest.raises(ConfigError, match="the search index needs DOCCHAT_OPENSEARCH_ENDPOINT"):
        _ = CloudServices(SearchIndex.from_env(environ, reader="the search index")).index
    assert list(tmp_path.iterdir()) == []


def test_cloud_services_build_no_adapter_their_settings_do_not_declare() -> None:
    # Given the Embed function's settings, which declare no search index
    settings = EmbedSettings.from_env(
        {"DOCCHAT_ARTIFACTS_BUCKET": "artifacts"}, reader="the embed function"
    )

    # When its services are asked for the index, Then they refuse, naming the missing group
    with pytest.raises(TypeError, match="EmbedSettings does not declare the settings of Search"):
        _ = CloudServices(settings).index


def test_cloud_wiring_leaves_the_web_app_to_the_chat_function() -> None:
    # The ingestion Lambdas' packages have no FastAPI: their handlers import this wiring, so it
    # imports the web app (and the agent) only in cloud_app.
    code = (
        "import sys, docchat.wiring.cloud, docchat.ingest.steps, docchat.ingest.failures; "
        "print(sorted(m for m in ('fastapi', 'starlette', 'docchat.serve.app', "
        "'docchat.answer.agent') if m in sys.modules))"
    )
    shown = fresh_python(code)

    assert shown.strip() == "[]"
