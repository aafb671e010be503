#!/usr/bin/env bash
# Items per second of CF.INSERT and CF.MEXISTS (100 random items a command)
# and CF.DEL (one item a command, the only form it has: 100 commands a
# pipeline) on a cuckoo filter of 1M capacity (CF.RESERVE bench 1000000:
# 524,288 buckets of 2), through one server binary (.ci/valkey-server:
# Valkey 9.1, or $VALKEY_SERVER) and one redis-benchmark, for this module
# and RedisBloom's .so, in alternating rounds; prints every round, the
# medians and this module's median over RedisBloom's. Both modules run the
# same algorithm on the same data, so the same commands do the same work.
#
#   cargo build --release -p atomic-bloom-redis
#   bash atomic-bloom-redis/bench/cf_compare.sh PEER.so [ROUNDS]
#
# ROUNDS defaults to 5. Each round starts a fresh server per module:
# CF.INSERT fills the filter to about 86% (REQUESTS commands x 100 random
# items of RANGE), CF.MEXISTS looks up 4 x REQUESTS x 100 random items, CF.DEL
# deletes REQUESTS x 100 random items (most of them held). REQUESTS
# (9,000) and RANGE (3,000,000) shrink it for a smoke test; OURS names
# another build of this module. Run it on a quiet machine: nothing else
# building or benchmarking.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ $# -lt 1 ] || [ ! -f "$1" ]; then
    echo "usage: $0 PEER.so [ROUNDS]  (PEER.so: RedisBloom's module)" >&2
    exit 2
fi
peer=$(realpath "$1")
rounds=${2:-5}
ours=$(realpath "${OURS:-target/release/libatomic_bloom_redis.so}")
server=$(realpath .ci/valkey-server)
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
    mexists=$(redis-benchmark -p "$port" -n $((requests * 4)) -P 16 -c 4 -r "$range" --csv CF.MEXISTS bench $args | rate)
    del=$(redis-benchmark -p "$port" -n $((requests * items)) -P $items -c 4 -r "$range" --csv CF.DEL bench __rand_int__ | rate)
    # The floor: the same commands on a key that does not exist, which a
    # module answers without touching a filter (zeros; CF.EXISTS stands for
    # a one-item command, as CF.DEL of a missing key is an error reply):
    # what the server and the client cost alone, so no module's items per
    # second can pass it.
    # shellcheck disable=SC2086
    floor_mexists=$(redis-benchmark -p "$port" -n $((requests * 4)) -P 16 -c 4 -r "$range" --csv CF.MEXISTS nokey $args | rate)
    floor_del=$(redis-benchmark -p "$port" -n $((requests * items)) -P $items -c 4 -r "$range" --csv CF.EXISTS nokey __rand_int__ | rate)
    redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    for _ in $(seq 200); do redis-cli -p "$port" PING >/dev/null 2>&1 || break; sleep 0.05; done
    python3 -c "print(round($insert * $items), round($mexists * $items), round($del), round($floor_mexists * $items), round($floor_del))"
}

echo "server: $("$server" --version)"
echo "redis-benchmark: $(redis-benchmark --version)"
echo "machine: $(lscpu | grep 'Model name' | sed 's/.*: *//')"
results=("" "")
subjects=("$ours" "$peer")
for round in $(seq "$rounds"); do
    for at in 0 1; do
        module=${subjects[$at]}
        figures=$(run "$module")
        read -r insert mexists del floor_mexists floor_del <<<"$figures"
        echo "round $round $(basename "$module"): CF.INSERT $insert items/s, CF.MEXISTS $mexists items/s, CF.DEL $del items/s; on a missing key: CF.MEXISTS $floor_mexists, CF.EXISTS $floor_del"
        results[at]+="$figures;"
    done
done
echo
python3 - "$(basename "$ours")" "${results[0]}" "$(basename "$peer")" "${results[1]}" <<'PY'
import statistics, sys
names = ["CF.INSERT", "CF.MEXISTS", "CF.DEL"]
def medians(text, columns=range(3)):
    rounds = [r.split() for r in text.split(";") if r]
    return [statistics.median(float(r[i]) for r in rounds) for i in columns]
ours, theirs = medians(sys.argv[2]), medians(sys.argv[4])
for label, values in [(sys.argv[1], ours), (sys.argv[3], theirs)]:
    print(f"{label}: median " +
          ", ".join(f"{n} {v / 1e6:.2f}M items/s" for n, v in zip(names, values)))
print("ratio (this module / RedisBloom): " +
      ", ".join(f"{n} {o / t:.2f}x" for n, o, t in zip(names, ours, theirs)))
# The most any module could reach over RedisBloom here: the server and
# client alone (a missing key, either module's median), over RedisBloom.
floor = [max(a, b) for a, b in zip(medians(sys.argv[2], (3, 4)), medians(sys.argv[4], (3, 4)))]
print("a missing key (server and client alone): " +
      f"CF.MEXISTS {floor[0] / 1e6:.2f}M items/s, CF.DEL {floor[1] / 1e6:.2f}M items/s; " +
      f"the most any module could reach over RedisBloom: CF.MEXISTS {floor[0] / theirs[1]:.2f}x, " +
      f"CF.DEL {floor[1] / theirs[2]:.2f}x")
PY
