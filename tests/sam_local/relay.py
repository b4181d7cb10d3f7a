"""A TCP relay from the Docker bridge's gateway address to a stand-in on loopback.

`sam local` runs each function in a container on Docker's default bridge (its --docker-network
host does not change that), where the machine's 127.0.0.1 is out of reach; the stand-ins for
AWS stay on loopback and each gets a relay on the gateway (docker0) address instead."""

from __future__ import annotations

import contextlib
import fcntl
import socket
import struct
import subprocess
import threading
from typing import Self

from infra.sam_local.tools import SetupError

BUFFER = 65536
SIOCGIFADDR = 0x8915  # <linux/sockios.h>


def bridge_gateway() -> str:
    """The default bridge's address on this machine (its gateway): the machine as the
    containers see it. Docker 20.10 leaves the gateway out of `network inspect` for the default
    bridge, so it is read from the bridge's interface (docker0)."""
    interface = subprocess.run(
        ["docker", "network", "inspect", "bridge", "--format",
         '{{index .Options "com.docker.network.bridge.name"}}'],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout.strip() or "docker0"  # fmt: skip
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(
                sock.fileno(), SIOCGIFADDR, struct.pack("256s", interface.encode()[:15])
            )
        except OSError as exc:
            raise SetupError(f"the Docker bridge {interface} has no IPv4 address: {exc}") from exc
    return socket.inet_ntoa(packed[20:24])


class Relay:
    """Accepts on (host, a free port) and pipes each connection to 127.0.0.1:<target>."""

    def __init__(self, host: str, target_port: int) -> None:
        self.target_port = target_port
        self._server = socket.create_server((host, 0))
        self.host, self.port = host, self._server.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=30)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
        _pipe(client, upstream)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(BUFFER):
            sink.sendall(data)
    for end in (source, sink):
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
        end.close()
