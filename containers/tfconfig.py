"""A TFJob-style check for the container e2e test (image path /opt/train/tfconfig.py).

Reads TF_CONFIG as the operator wrote it, listens on this task's own address, and connects
to every task of the cluster (retrying until a deadline): proves that the hosts TF_CONFIG
names (``<svc>.<ns>.svc:<port>``) resolve and reach the right replica on the manifest's port.
"""

import json
import os
import socket
import threading
import time


def main() -> None:
    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    cluster = config["cluster"]
    me = cluster[task["type"]][task["index"]]
    server = socket.create_server(("", int(me.rsplit(":", 1)[1])))
    name = f"{task['type']}-{task['index']}"
    peers = [address for addresses in cluster.values() for address in addresses]
    everyone_asked = threading.Semaphore(0)
    threading.Thread(target=_answer, args=(server, name, everyone_asked), daemon=True).start()
    for address in peers:
        host, port = address.rsplit(":", 1)
        print(f"tfconfig {name} reached {address}: {_ask(host, int(port))}", flush=True)
    print(f"tfconfig {name} reached all {len(peers)} tasks OK", flush=True)
    for _ in peers:  # keep answering until every task (this one too) has asked
        if not everyone_asked.acquire(timeout=60):
            raise SystemExit("a task never asked")


def _answer(server: socket.socket, name: str, asked: threading.Semaphore) -> None:
    while True:
        conn, _ = server.accept()
        with conn:
            conn.sendall(name.encode())
        asked.release()


def _ask(host: str, port: int) -> str:
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection((host, port), timeout=2) as conn:
                return conn.recv(64).decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


if __name__ == "__main__":
    main()
