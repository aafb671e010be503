#!/usr/bin/env bash
# redis-py's cf() API end to end against the module (bench/redis_py_cf.py),
# in a venv of its own with the current redis-py from PyPI.
#
#   bash atomic-bloom-redis/bench/redis_py_cf.sh [MODULE.so [REDISBLOOM.so]]
#
# Without MODULE.so the module is built (cargo build --release -p
# atomic-bloom-redis). With REDISBLOOM.so every result is compared with
# RedisBloom's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
module=${1:-}
if [[ -z $module ]]; then
    (cd "$root" && cargo build --release -p atomic-bloom-redis)
    module=$target/release/libatomic_bloom_redis.so
fi
venv=$target/redis-py/venv
if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check redis
fi
exec "$venv/bin/python" "$root/atomic-bloom-redis/bench/redis_py_cf.py" "$module" ${2:+"$2"}
