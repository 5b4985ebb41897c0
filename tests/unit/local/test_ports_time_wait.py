"""A port in TIME_WAIT is not handed out: programs that bind without SO_REUSEADDR would fail."""

from __future__ import annotations

import socket

from trainop.local import ports


def test_a_port_whose_last_connection_is_in_time_wait_is_not_bindable() -> None:
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((ports.LOOPBACK, 0))
        port = int(server.getsockname()[1])
        server.listen()
        with socket.create_connection((ports.LOOPBACK, port)):
            accepted, _ = server.accept()
            accepted.close()  # the server side closes first: its end goes to TIME_WAIT
            server.close()
            assert not ports.is_bindable(port)
