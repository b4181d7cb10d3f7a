"""The chat Lambda's wiring makes no OpenSearch request while it starts."""

from __future__ import annotations

import contextlib
import socket
import threading

from docchat.cloud import CloudServices
from docchat.config import Settings


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
    settings = Settings.from_env(
        {
            "DOCCHAT_OPENSEARCH_ENDPOINT": f"http://{host}:{port}",
            "DOCCHAT_OPENSEARCH_SERVICE": "es",
            "DOCCHAT_EMBEDDER": "titan",
            "DOCCHAT_REGION": "us-east-1",
        }
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
