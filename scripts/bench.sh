#!/usr/bin/env bash
# scripts/bench.sh — Sediment against redis-server, side by side.
#
#   scripts/bench.sh [all|redis-benchmark|always|large|churn|blocked|groups|zset|pubsub|otel|memory]   (default: all)
#
# `make bench` builds bin/sediment, bin/churnbench and bin/zrankbench and
# runs every part (all); `make bench-rb` runs only the redis-benchmark
# part, `make bench-large` only the large part, `make bench-churn` only the
# churn part, `make bench-blocked` only the blocked part, `make
# bench-groups` only the groups part and `make bench-zset` only the zset
# part; `make bench-always` runs only the always part and `make
# bench-memory` the memory part, which `all` leaves out (it takes minutes).
# The script starts Sediment and a
# redis-server with comparable durability (AOF, appendfsync everysec, no RDB
# snapshots) on free loopback ports, each with a fresh temp data dir, then:
#
# redis-benchmark: runs redis-benchmark for SET, GET, INCR, MSET (10 keys),
# HSET, HGET (on the hash HSET filled), SADD, XADD, LPUSH, RPUSH, LPOP,
# RPOP (on the list the pushes filled), LRANGE_100, ZADD and ZPOPMIN (on
# the sorted set ZADD filled), unpipelined and with -P 16, alternating the
# two servers test by test for ROUNDS rounds, and prints the median
# requests/s of each server and their ratio. ZADD's members are
# element:__rand_int__, so with -r 100000 the set holds at most 100,000
# members (about 86,000 after a round's two ZADD runs of 100,000): the
# round's later ZPOPMIN requests pop an empty key, unlike LPOP and RPOP,
# which pop exactly what the pushes added.
#
# always: restarts both servers with appendfsync always (Sediment's
# --appendfsync always, redis-server's AOF with appendfsync always: a reply
# only after its write is fsynced, on both) and runs redis-benchmark SET
# and XADD, unpipelined and with -P 16, alternating the servers for ROUNDS
# rounds; prints the medians, the ratio and each server's CPU per request
# as the redis-benchmark part does. The servers are then restarted with
# everysec for the parts after it.
#
# otel: starts four more Sediment servers, each on its own data
# directory: telemetry off (no OTEL_* variables), sampled0
# (OTEL_EXPORTER_OTLP_ENDPOINT set, OTEL_TRACES_SAMPLER=always_off: metrics
# exported, traces off, as telemetry.Setup turns them off for a sampler
# that samples nothing), sampled0.01 (traceidratio 0.01: one command in a
# hundred traced) and sampled1 (always_on: every command and commit span
# exported), all exporting over OTLP/HTTP to bin/otlpsink (cmd/otlpsink),
# which discards what it gets. It runs redis-benchmark SET, GET and XADD
# against the four, alternating them test by test for ROUNDS rounds, and
# prints each one's median rate, its ratio to the off server's and its CPU
# per request.
#
# memory: fills each server with MEMORY_ENTRIES (default 10,000,000)
# stream entries of 64 bytes (one stream, XADD * d <64 bytes>, pipelined),
# then prints Sediment's resident memory (VmRSS) beside redis-server's
# used_memory and VmRSS, the ratio Sediment RSS / Redis used_memory, each
# data directory's size, and the time from starting each server again on
# its data to its first reply to XLEN with the whole count: after a clean
# shutdown (SIGTERM) and, for Sediment, after SIGKILL (the change log's
# records after Pebble's flushed state are replayed).
#
# large: runs redis-benchmark SET, HSET, XADD and GET with values of 1 KB, 10 KB
# and 100 KB (LARGE_SIZES) over 1,000 keys, LARGE_BYTES of values per run,
# and prints each server's rate, CPU per request and disk bytes written per
# value byte (/proc/PID/io).
#
# churn: runs bin/churnbench (cmd/churnbench) for each churn workload
# against Sediment, then against redis-server: one client, unpipelined,
# CHURN_N commands per workload in CHURN_BLOCKS consecutive blocks. It
# prints, per block, each server's ms per command, the ratio redis ms /
# sediment ms (Sediment's throughput relative to Redis's) and each server's
# CPU µs per command; per workload, Sediment's last block / first block
# (target <= 1.2) and the worst block's ratio (target >= 0.5).
#
# blocked: for each W in BLOCKED_WORKERS, runs bin/churnbench -workloads
# blocked against Sediment, then redis-server: W connections loop
# XREADGROUP ... COUNT 1 BLOCK 2000 on one group while one producer adds
# BLOCKED_N entries, one XADD at a time; all that BLOCKED_ROUNDS times. It
# prints, per W, each server's delivered entries/s, XADD p99 and CPU µs per
# delivered entry (medians over the rounds), and the ratio sediment / redis
# CPU per entry (target <= 2); then Sediment's CPU per entry at the largest
# W over the smallest (target <= 1.5). Every entry must reach exactly one
# worker, or the run fails. It raises the soft open-file limit (ulimit -n)
# when the largest W needs it.
#
# groups: runs bin/churnbench -workloads groups against Sediment, then
# redis-server: GROUPS_PRODUCERS connections add 64-byte entries (XADD key
# * d <payload>, one at a time each) while GROUPS_CONSUMERS connections loop
# XREADGROUP GROUP g c<i> COUNT 10 BLOCK 100 STREAMS key > and XACK each
# batch. A max run adds GROUPS_N entries as fast as the replies come; a
# rate run offers GROUPS_RATE entries/s for GROUPS_DURATION seconds, each
# entry at its scheduled time. It prints each server's entries received and
# acknowledged per second and the ratio sediment / redis of the max run
# (target >= 0.8), the end-to-end p99 of the rate run (reply received minus
# the scheduled send time; target <= 2 ms), and each server's CPU µs per
# entry. Every entry must be received exactly once and acknowledged, and
# XPENDING must count 0 at the end, or the run fails.
#
# zset: for each size in ZSET_SIZES, runs bin/zrankbench (cmd/zrankbench)
# against both servers: it fills a sorted set of that many members (member
# m:<i> of score i, added in a random order), then one client times
# ZSET_CALLS calls, one at a time, of ZRANK, ZRANGE by rank (head, tail,
# middle, random), ZCOUNT (whole set, random range) and ZSCORE, alternating
# the servers command by command. It prints each server's mean, median and
# p99 round trip and CPU µs per call, and the ratios sediment / redis of
# the mean and of the CPU. Every reply is checked.
#
# pubsub: runs bin/pubsubbench (cmd/pubsubbench) against both servers:
# for each count in PUBSUB_SUBS, that many connections SUBSCRIBE to one
# channel and one connection sends PUBSUB_N PUBLISH commands of 64 bytes,
# one at a time. It prints each server's PUBLISH rate, the latency from
# PUBLISH to arrival at each subscriber (p50, p99, max) and CPU µs per
# PUBLISH, and the ratios sediment / redis. Every subscriber must receive
# every message in order.
#
# Environment:
#   BENCH_N          requests per redis-benchmark run (default 100000)
#   ROUNDS           rounds; the median per server is reported (default 3)
#   BENCH_CLIENTS    parallel connections, redis-benchmark -c (default 50)
#   BENCH_TIMEOUT    seconds one redis-benchmark run may take (default 120)
#   LARGE_BYTES      bytes of values per large-value run (default 300000000)
#   LARGE_SIZES      value sizes of the large part (default "1000 10000 100000")
#   PREFAULT_MB      MiB of memory to touch once before the large part (default
#                    16384; never more than the memory available less 3 GiB;
#                    0: none). On a virtual machine the first use of a page of
#                    guest memory is a fault to the host, several times the cost
#                    of a page the guest already used: the server that first
#                    grows the page cache pays it: here it made a 100 KB SET
#                    cost redis-server up to three times its CPU
#                    (docs/perf.md, "First touch of guest memory").
#   CHURN_N          commands per churn workload (default 1000000)
#   CHURN_BLOCKS     blocks each churn workload is measured in (default 10)
#   CHURN_WORKLOADS  comma-separated churn workloads, in order (default: all,
#                    see `bin/churnbench -list`; pel-probe must follow group-ack)
#   CHURN_MAX_TIME   seconds one churn workload may run on one server
#                    (default 600); it then stops and reports what it measured
#   CHURN_PROBE_N    calls of each pel-probe command (default 10000)
#   CHURN_OUT        a directory to copy the churn, blocked and groups CSVs to (default: none)
#   BLOCKED_N        entries the producer adds per blocked run (default 2000)
#   BLOCKED_WORKERS  worker counts, one blocked run each (default "10 100 1000")
#   BLOCKED_ROUNDS   rounds of blocked runs; medians are reported (default 1)
#   GROUPS_N         entries of the groups max run (default 200000)
#   GROUPS_RATE      entries/s the groups rate run offers (default 20000)
#   GROUPS_DURATION  seconds of the groups rate run (default 10)
#   GROUPS_PRODUCERS producer connections of the groups part (default 4)
#   GROUPS_CONSUMERS consumer connections of the groups part (default 4)
#   ZSET_SIZES       sorted-set sizes, one zset run each (default "10000 1000000")
#   ZSET_CALLS       timed calls per command and server in the zset part (default 2000)
#   PUBSUB_SUBS      subscriber counts, one pubsub run each (default "1 100")
#   PUBSUB_N         timed PUBLISH commands per pubsub run (default 20000)
#   MEMORY_ENTRIES   stream entries of the memory part (default 10000000)
#   SEDIMENT_BIN     the Sediment binary (default bin/sediment)
#   CHURNBENCH_BIN   the churn load generator (default bin/churnbench)
#   ZRANKBENCH_BIN   the sorted-set read benchmark (default bin/zrankbench)
#   PUBSUBBENCH_BIN  the pub/sub benchmark (default bin/pubsubbench)
#   OTLPSINK_BIN     the OTLP endpoint of the otel part (default bin/otlpsink)
#
# Only loopback addresses are used. Both servers are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${BENCH_N:-100000}
ROUNDS=${ROUNDS:-3}
CLIENTS=${BENCH_CLIENTS:-50}
TIMEOUT=${BENCH_TIMEOUT:-120}
CHURN_N=${CHURN_N:-1000000}
CHURN_BLOCKS=${CHURN_BLOCKS:-10}
CHURN_WORKLOADS=${CHURN_WORKLOADS:-}
CHURN_MAX_TIME=${CHURN_MAX_TIME:-600}
CHURN_PROBE_N=${CHURN_PROBE_N:-10000}
CHURN_OUT=${CHURN_OUT:-}
BLOCKED_N=${BLOCKED_N:-2000}
BLOCKED_WORKERS=${BLOCKED_WORKERS:-10 100 1000}
BLOCKED_ROUNDS=${BLOCKED_ROUNDS:-1}
GROUPS_N=${GROUPS_N:-200000}
GROUPS_RATE=${GROUPS_RATE:-20000}
GROUPS_DURATION=${GROUPS_DURATION:-10}
GROUPS_PRODUCERS=${GROUPS_PRODUCERS:-4}
GROUPS_CONSUMERS=${GROUPS_CONSUMERS:-4}
SEDIMENT_BIN=${SEDIMENT_BIN:-bin/sediment}
CHURNBENCH_BIN=${CHURNBENCH_BIN:-bin/churnbench}
ZRANKBENCH_BIN=${ZRANKBENCH_BIN:-bin/zrankbench}
ZSET_SIZES=${ZSET_SIZES:-10000 1000000}
ZSET_CALLS=${ZSET_CALLS:-2000}
PUBSUBBENCH_BIN=${PUBSUBBENCH_BIN:-bin/pubsubbench}
OTLPSINK_BIN=${OTLPSINK_BIN:-bin/otlpsink}
EXTRA_PIDS="" # the otel part's servers and sink, stopped by cleanup
PUBSUB_SUBS=${PUBSUB_SUBS:-1 100}
PUBSUB_N=${PUBSUB_N:-20000}
LARGE_BYTES=${LARGE_BYTES:-300000000}
LARGE_SIZES=${LARGE_SIZES:-1000 10000 100000}
PREFAULT_MB=${PREFAULT_MB:-}
MEMORY_ENTRIES=${MEMORY_ENTRIES:-10000000}
SYNC=everysec # the servers' appendfsync policy (the always part changes it)
HOST=127.0.0.1
PIPELINES=(1 16)

die() { echo "bench: $*" >&2; exit 1; }
log() { echo "bench: $*" >&2; }

MODE=${1:-all}
USAGE="usage: $0 [all|redis-benchmark|always|large|churn|blocked|groups|zset|pubsub|otel|memory]"
(($# <= 1)) || die "$USAGE"
case $MODE in
  all) PARTS=(redis-benchmark always large churn blocked groups zset pubsub otel) ;;
  redis-benchmark | always | large | churn | blocked | groups | zset | pubsub | otel | memory) PARTS=("$MODE") ;;
  *) die "unknown part '$MODE' ($USAGE)" ;;
esac
has_part() { [[ " ${PARTS[*]} " == *" $1 "* ]]; }

tools=(redis-server redis-cli)
if has_part redis-benchmark || has_part always || has_part large || has_part memory; then
  for v in N ROUNDS CLIENTS TIMEOUT LARGE_BYTES MEMORY_ENTRIES; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
  done
  tools+=(redis-benchmark)
fi
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "$tool not found on PATH (apt-get install redis-server redis-tools)"
done
[[ -x $SEDIMENT_BIN ]] || die "$SEDIMENT_BIN not found: run 'make build' (or 'make bench')"
if has_part churn || has_part blocked || has_part groups; then
  [[ -x $CHURNBENCH_BIN ]] || die "$CHURNBENCH_BIN not found: run 'make churnbench' (or 'make bench-churn')"
  if [[ -n $CHURN_OUT ]]; then
    mkdir -p "$CHURN_OUT" || die "cannot create CHURN_OUT=$CHURN_OUT"
  fi
fi
if has_part churn; then
  for v in CHURN_N CHURN_BLOCKS CHURN_MAX_TIME CHURN_PROBE_N; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
  done
  # Check the workload names before any server starts. The blocked and
  # groups workloads are parts of their own.
  CHURN_LIST=$("$CHURNBENCH_BIN" -list | awk -F'\t' '$1 != "blocked" && $1 != "groups"') || die "$CHURNBENCH_BIN -list failed"
  [[ -n $CHURN_WORKLOADS ]] || CHURN_WORKLOADS=$(cut -f1 <<<"$CHURN_LIST" | paste -sd, -)
  prev=""
  IFS=, read -ra CHURN_UNITS_IN <<<"$CHURN_WORKLOADS"
  for w in "${CHURN_UNITS_IN[@]}"; do
    [[ $w != blocked ]] || die "CHURN_WORKLOADS: blocked is a part of its own: $0 blocked (make bench-blocked)"
    [[ $w != groups ]] || die "CHURN_WORKLOADS: groups is a part of its own: $0 groups (make bench-groups)"
    cut -f1 <<<"$CHURN_LIST" | grep -qxF -- "$w" ||
      die "CHURN_WORKLOADS: unknown workload '$w' (have: $(cut -f1 <<<"$CHURN_LIST" | paste -sd' ' -))"
    [[ $w != pel-probe || $prev == group-ack ]] || die "CHURN_WORKLOADS: pel-probe must come right after group-ack"
    prev=$w
  done
fi
if has_part blocked; then
  for v in BLOCKED_N BLOCKED_ROUNDS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
  done
  read -ra BLOCKED_WS <<<"$BLOCKED_WORKERS"
  ((${#BLOCKED_WS[@]} > 0)) || die "BLOCKED_WORKERS is empty"
  BLOCKED_MAX_W=0
  for w in "${BLOCKED_WS[@]}"; do
    [[ $w =~ ^[1-9][0-9]*$ ]] || die "BLOCKED_WORKERS: '$w' is not a positive integer"
    if ((w > BLOCKED_MAX_W)); then BLOCKED_MAX_W=$w; fi
  done
  # Each server and the load generator hold one socket per worker, each in
  # its own process. Go programs raise their soft limit to the hard one by
  # themselves; redis-server needs the soft limit, which the servers
  # inherit from here.
  need=$((BLOCKED_MAX_W + 256))
  soft=$(ulimit -Sn) hard=$(ulimit -Hn)
  if [[ $soft != unlimited ]] && ((soft < need)); then
    if [[ $hard != unlimited ]] && ((hard < need)); then
      die "BLOCKED_WORKERS up to $BLOCKED_MAX_W needs an open-file limit of $need per process, but the hard limit (ulimit -Hn) is $hard: raise it or lower BLOCKED_WORKERS"
    fi
    ulimit -Sn "$need" || die "cannot raise the open-file limit (ulimit -n) from $soft to $need"
    log "raised the open-file limit (ulimit -n) from $soft to $need for $BLOCKED_MAX_W workers"
  fi
fi
if has_part zset; then
  [[ -x $ZRANKBENCH_BIN ]] || die "$ZRANKBENCH_BIN not found: run 'make zrankbench' (or 'make bench-zset')"
  [[ $ZSET_CALLS =~ ^[1-9][0-9]*$ ]] || die "ZSET_CALLS must be a positive integer, got '$ZSET_CALLS'"
  read -ra ZSET_NS <<<"$ZSET_SIZES"
  ((${#ZSET_NS[@]} > 0)) || die "ZSET_SIZES is empty"
  for n in "${ZSET_NS[@]}"; do
    if ! [[ $n =~ ^[1-9][0-9]*$ ]] || ((n < 10)); then
      die "ZSET_SIZES: '$n' is not an integer of at least 10"
    fi
  done
fi
if has_part otel; then
  [[ -x $OTLPSINK_BIN ]] || die "$OTLPSINK_BIN not found: run 'make otlpsink' (or 'make bench-otel')"
fi
if has_part pubsub; then
  [[ -x $PUBSUBBENCH_BIN ]] || die "$PUBSUBBENCH_BIN not found: run 'make pubsubbench' (or 'make bench-pubsub')"
  [[ $PUBSUB_N =~ ^[1-9][0-9]*$ ]] || die "PUBSUB_N must be a positive integer, got '$PUBSUB_N'"
  read -ra PUBSUB_SS <<<"$PUBSUB_SUBS"
  ((${#PUBSUB_SS[@]} > 0)) || die "PUBSUB_SUBS is empty"
  for n in "${PUBSUB_SS[@]}"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "PUBSUB_SUBS: '$n' is not a positive integer"
  done
fi
if has_part groups; then
  for v in GROUPS_N GROUPS_RATE GROUPS_DURATION GROUPS_PRODUCERS GROUPS_CONSUMERS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
  done
fi

# ---------------------------------------------------------------- servers

SED_PID="" RED_PID=""
WORK=$(mktemp -d -t sediment-bench.XXXXXX)
SED_DIR=$(mktemp -d -t sediment-bench-data.XXXXXX)
RED_DIR=$(mktemp -d -t redis-bench-data.XXXXXX)

cleanup() {
  local pid
  for pid in $SED_PID $RED_PID $EXTRA_PIDS; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $SED_PID $RED_PID $EXTRA_PIDS; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK" "$SED_DIR" "$RED_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# port_in_use reports whether any TCP socket (listening or connected) uses
# port locally.
port_in_use() {
  if command -v ss >/dev/null 2>&1; then
    ss -Htan "sport = :$1" 2>/dev/null | grep -q .
  else
    (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
  fi
}

# Ports are picked below the kernel's ephemeral range, so that outgoing
# connections (ours or anyone's) cannot take them between check and bind.
EPHEMERAL_LOW=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
((EPHEMERAL_LOW > 11024)) || EPHEMERAL_LOW=32768

# free_port prints a loopback port no socket uses, other than $1.
free_port() {
  local p i
  for i in $(seq 1 200); do
    p=$((10000 + RANDOM % (EPHEMERAL_LOW - 10000)))
    [[ $p != "${1:-}" ]] && ! port_in_use "$p" && { echo "$p"; return; }
  done
  die "no free port found"
}

# wait_ready waits until the server (pid, port) answers PING. It returns 2
# if the server exited because its port was taken (the caller retries), and
# dies on any other failure.
wait_ready() {
  local name=$1 pid=$2 port=$3 logf=$4 i
  for i in $(seq 1 150); do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" 2>/dev/null || true
      grep -qi 'address already in use' "$logf" && return 2
      tail -20 "$logf" >&2
      die "$name exited during startup"
    fi
    if [[ $(redis-cli -h "$HOST" -p "$port" PING 2>/dev/null) == PONG ]]; then
      return 0
    fi
    sleep 0.1
  done
  tail -20 "$logf" >&2
  die "$name did not answer PING on $HOST:$port within 15s"
}

# launch_sediment / launch_redis start a server on SED_PORT / RED_PORT and
# set SED_PID / RED_PID, without waiting for it.
launch_sediment() {
  # --nats-listen off: no port 4222 to collide with another instance
  # (the change feed stays idle either way with no subscriber).
  "$SEDIMENT_BIN" --bind "$HOST" --port "$SED_PORT" --dir "$SED_DIR" --appendfsync "$SYNC" \
    --nats-listen off --log-level warn >>"$WORK/sediment.log" 2>&1 &
  SED_PID=$!
}

launch_redis() {
  redis-server --bind "$HOST" --port "$RED_PORT" --save "" --appendonly yes --appendfsync "$SYNC" \
    --dir "$RED_DIR" --daemonize no --logfile "" >>"$WORK/redis.log" 2>&1 &
  RED_PID=$!
}

# start_sediment / start_redis start a server on a free port (retrying if
# the port is taken at bind time) and set *_PORT and *_PID.
start_sediment() {
  local attempt rc
  for attempt in 1 2 3 4 5; do
    SED_PORT=$(free_port "${RED_PORT:-}")
    : >"$WORK/sediment.log"
    launch_sediment
    rc=0
    wait_ready sediment "$SED_PID" "$SED_PORT" "$WORK/sediment.log" || rc=$?
    ((rc == 0)) && return
    log "port $SED_PORT was taken; retrying"
    SED_PID=""
  done
  die "could not start sediment"
}

start_redis() {
  local attempt rc
  for attempt in 1 2 3 4 5; do
    RED_PORT=$(free_port "${SED_PORT:-}")
    : >"$WORK/redis.log"
    launch_redis
    rc=0
    wait_ready redis-server "$RED_PID" "$RED_PORT" "$WORK/redis.log" || rc=$?
    ((rc == 0)) && return
    log "port $RED_PORT was taken; retrying"
    RED_PID=""
  done
  die "could not start redis-server"
}

# stop_server pid: SIGTERM, then wait for it to exit.
stop_server() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# restart_servers policy: stops both servers and starts them again with
# appendfsync policy on fresh, empty data directories.
restart_servers() {
  stop_server "$SED_PID"
  stop_server "$RED_PID"
  SED_PID="" RED_PID=""
  rm -rf "$SED_DIR" "$RED_DIR"
  mkdir -p "$SED_DIR" "$RED_DIR"
  SYNC=$1
  SED_PORT="" RED_PORT=""
  start_sediment
  start_redis
}

SED_PORT="" RED_PORT=""
start_sediment
start_redis

# Sanity: every benchmarked command must succeed on both servers, or
# redis-benchmark would happily time error replies.
for port in "$SED_PORT" "$RED_PORT"; do
  [[ $(redis-cli -h "$HOST" -p "$port" SET bench:check 1) == OK ]] || die "SET failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" GET bench:check) == 1 ]] || die "GET failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" INCR bench:check) == 2 ]] || die "INCR failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" MSET bench:a 1 bench:b 2) == OK ]] || die "MSET failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" HSET bench:h f 1) == 1 ]] || die "HSET failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" HGET bench:h f) == 1 ]] || die "HGET failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" SADD bench:set m) == 1 ]] || die "SADD failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" ZADD bench:z 1 m) == 1 ]] || die "ZADD failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" ZPOPMIN bench:z | paste -sd' ' -) == 'm 1' ]] || die "ZPOPMIN failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" XADD bench:check:s '*' f 1) =~ ^[0-9]+-[0-9]+$ ]] ||
    die "XADD failed on port $port"
done

SED_VERSION=$("$SEDIMENT_BIN" --version 2>/dev/null | awk '{print $2}')
RED_VERSION=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
log "sediment ${SED_VERSION:-?} on $HOST:$SED_PORT, redis-server ${RED_VERSION:-?} on $HOST:$RED_PORT"
# ---------------------------------------------------------------- redis-benchmark

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'; }

declare -A RESULTS # "server|TEST|pipeline" -> space-separated rps values
declare -A CPU     # "server|TEST|pipeline" -> space-separated server CPU µs per request

# cpu_ticks pid: user+system CPU time of pid, in clock ticks (10 ms).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run_bench server port pid workload pipeline: one redis-benchmark run of
# one test (a built-in one such as set or zadd, or xadd or hget, given as
# commands); records its requests/s and the server's CPU µs per request.
run_bench() {
  local server=$1 port=$2 pid=$3 workload=$4 pipe=$5 out line name rps t0 t1
  local args=(-h "$HOST" -p "$port" -c "$CLIENTS" -n "$N" -r 100000 -P "$pipe" -q --csv)
  case $workload in
    xadd) args+=(XADD bench:s '*' f __rand_int__) ;;
    hget) args+=(HGET myhash element:__rand_int__) ;;
    *) args+=(-t "$workload") ;;
  esac
  t0=$(cpu_ticks "$pid")
  if ! out=$(timeout "$TIMEOUT" redis-benchmark "${args[@]}" 2>"$WORK/bench.err"); then
    cat "$WORK/bench.err" >&2
    die "redis-benchmark failed or timed out ($server, $workload, -P $pipe)"
  fi
  t1=$(cpu_ticks "$pid")
  local got=0 cpu
  cpu=$(awk -v d=$((t1 - t0)) -v n="$N" 'BEGIN { printf "%.1f", d * 10000 / n }')
  while IFS= read -r line; do
    line=${line%$'\r'}
    [[ $line == '"test"'* || -z $line ]] && continue
    line=${line#\"}
    name=${line%%\",\"*}
    rps=${line#*\",\"}
    rps=${rps%%\"*}
    [[ $rps =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "cannot parse redis-benchmark line: $line"
    case $name in
      SET | GET | INCR | HSET | SADD | LPUSH | RPUSH | LPOP | RPOP | ZADD | ZPOPMIN) ;;
      LRANGE_100*) name=LRANGE_100 ;;
      MSET*) name=MSET ;;
      HGET*) name=HGET ;;
      XADD*) name=XADD ;;
      *) continue ;;
    esac
    RESULTS["$server|$name|$pipe"]+="$rps "
    CPU["$server|$name|$pipe"]+="$cpu "
    got=$((got + 1))
    log "  $(printf '%-8s %-4s P=%-2s %12s req/s %8s cpu µs/req' "$server" "$name" "$pipe" "$rps" "$cpu")"
  done <<<"$out"
  ((got > 0)) || die "no results from redis-benchmark ($server, $workload, -P $pipe): $out"
}

# median of the numbers given as arguments (mean of the middle two if even).
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { if (NR == 0) { print "nan"; exit }
          if (NR % 2) printf "%.2f\n", v[(NR + 1) / 2]
          else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# redis_benchmark_part runs ROUNDS rounds of redis-benchmark, alternating
# the servers, and prints the table.
redis_benchmark_part() {
  local round workload pipe
  log "redis-benchmark: n=$N clients=$CLIENTS rounds=$ROUNDS pipelines=${PIPELINES[*]} (appendfsync everysec on both)"
  local LOAD_BEFORE LOAD_AFTER START ELAPSED FMT
  LOAD_BEFORE=$(loadavg)
  START=$SECONDS
  for round in $(seq 1 "$ROUNDS"); do
    log "round $round/$ROUNDS"
    for workload in set get incr mset hset hget sadd xadd lpush rpush lpop rpop lrange_100 zadd zpopmin; do
      for pipe in "${PIPELINES[@]}"; do
        run_bench sediment "$SED_PORT" "$SED_PID" "$workload" "$pipe"
        run_bench redis "$RED_PORT" "$RED_PID" "$workload" "$pipe"
      done
    done
  done
  ELAPSED=$((SECONDS - START))
  LOAD_AFTER=$(loadavg)
  log "redis-benchmark runs took ${ELAPSED}s"

  echo
  echo "redis-benchmark -c $CLIENTS -n $N -r 100000, median of $ROUNDS rounds (requests/s)"
  echo "sediment ${SED_VERSION:-?} vs redis-server ${RED_VERSION:-?}, appendfsync everysec on both"
  echo "$(nproc 2>/dev/null || echo '?') CPUs; load average before: $LOAD_BEFORE, after: $LOAD_AFTER; runs took ${ELAPSED}s"
  echo
  echo "cpu = server user+system CPU per request, from /proc/PID/stat (10 ms ticks), median"
  echo
  rb_table sediment redis SET GET INCR MSET HSET HGET SADD XADD LPUSH RPUSH LPOP RPOP LRANGE_100 ZADD ZPOPMIN
}

# rb_table sed_label redis_label test...: prints the medians recorded by
# run_bench under the two labels for each test and pipeline depth, with
# the ratio and each server's CPU per request.
rb_table() {
  local sl=$1 rl=$2 name pipe s r ratio sc rc FMT='%-10s %8s %14s %14s %16s %12s %12s\n'
  shift 2
  # shellcheck disable=SC2059
  printf "$FMT" test pipeline "sediment ops/s" "redis ops/s" "sediment/redis" "sed cpu µs" "redis cpu µs"
  # shellcheck disable=SC2059
  printf "$FMT" ------ -------- -------------- -------------- ---------------- ------------ ------------
  for name in "$@"; do
    for pipe in "${PIPELINES[@]}"; do
      # shellcheck disable=SC2086
      s=$(median ${RESULTS["$sl|$name|$pipe"]})
      # shellcheck disable=SC2086
      r=$(median ${RESULTS["$rl|$name|$pipe"]})
      ratio=$(awk -v s="$s" -v r="$r" 'BEGIN { if (r > 0) printf "%.2f", s / r; else print "nan" }')
      # shellcheck disable=SC2086
      sc=$(median ${CPU["$sl|$name|$pipe"]})
      # shellcheck disable=SC2086
      rc=$(median ${CPU["$rl|$name|$pipe"]})
      # shellcheck disable=SC2059
      printf "$FMT" "$name" "$pipe" "$s" "$r" "$ratio" "$sc" "$rc"
    done
  done
}

# ---------------------------------------------------------------- always

# always_part restarts both servers with appendfsync always, runs ROUNDS
# rounds of SET and XADD at each pipeline depth, alternating the servers,
# prints the table, and restarts both with everysec for the parts after it.
always_part() {
  local round workload pipe LOAD_BEFORE START ELAPSED
  log "always: restarting both servers with appendfsync always"
  restart_servers always
  log "always: n=$N clients=$CLIENTS rounds=$ROUNDS pipelines=${PIPELINES[*]}"
  LOAD_BEFORE=$(loadavg)
  START=$SECONDS
  for round in $(seq 1 "$ROUNDS"); do
    log "always round $round/$ROUNDS"
    for workload in set xadd; do
      for pipe in "${PIPELINES[@]}"; do
        run_bench sediment-always "$SED_PORT" "$SED_PID" "$workload" "$pipe"
        run_bench redis-always "$RED_PORT" "$RED_PID" "$workload" "$pipe"
      done
    done
  done
  ELAPSED=$((SECONDS - START))
  echo
  echo "redis-benchmark -c $CLIENTS -n $N -r 100000, median of $ROUNDS rounds (requests/s)"
  echo "sediment ${SED_VERSION:-?} --appendfsync always vs redis-server ${RED_VERSION:-?} appendonly yes, appendfsync always"
  echo "$(nproc 2>/dev/null || echo '?') CPUs; load average before: $LOAD_BEFORE, after: $(loadavg); runs took ${ELAPSED}s"
  echo
  rb_table sediment-always redis-always SET XADD
  log "always: restarting both servers with appendfsync everysec"
  restart_servers everysec
}

# ---------------------------------------------------------------- memory

# rss_kb pid: the resident set size of pid in KiB (VmRSS).
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }

# now_ms: the wall clock in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# until_served pid port want: polls XLEN bench:mem every 10 ms until it
# replies want (at most 300 s); dies if the server exits.
until_served() {
  local pid=$1 port=$2 want=$3 i
  for i in $(seq 1 30000); do
    [[ $(redis-cli -h "$HOST" -p "$port" XLEN bench:mem 2>/dev/null) == "$want" ]] && return 0
    kill -0 "$pid" 2>/dev/null || die "the server on port $port exited while starting"
    sleep 0.01
  done
  die "XLEN bench:mem did not reply $want on port $port within 300 s"
}

# time_restart sediment|redis want: starts the (stopped) server again on
# its port and data, and waits until XLEN bench:mem replies want; sets
# SED_PID or RED_PID, and RESTART_MS to the milliseconds that took.
time_restart() {
  local t0
  t0=$(now_ms)
  if [[ $1 == sediment ]]; then
    launch_sediment
    until_served "$SED_PID" "$SED_PORT" "$2"
  else
    launch_redis
    until_served "$RED_PID" "$RED_PORT" "$2"
  fi
  RESTART_MS=$(($(now_ms) - t0))
}

# fill_memory port: adds MEMORY_ENTRIES entries of 64 bytes to bench:mem.
fill_memory() {
  local payload
  payload=$(head -c 64 /dev/zero | tr '\0' p)
  timeout 1800 redis-benchmark -h "$HOST" -p "$1" -c 8 -P 100 -n "$MEMORY_ENTRIES" -q \
    XADD bench:mem '*' d "$payload" >"$WORK/fill.out" 2>&1 ||
    { cat "$WORK/fill.out" >&2; die "filling bench:mem on port $1 failed"; }
  local got
  got=$(redis-cli -h "$HOST" -p "$1" XLEN bench:mem)
  [[ $got == "$MEMORY_ENTRIES" ]] || die "bench:mem holds $got entries on port $1, want $MEMORY_ENTRIES"
}

# memory_part fills both servers, measures their memory and data
# directories, then their restart times.
memory_part() {
  local t0 sed_fill red_fill sed_rss red_used red_rss sed_du red_du sed_term sed_kill red_term
  log "memory: $MEMORY_ENTRIES entries of 64 bytes, sediment first"
  t0=$SECONDS
  fill_memory "$SED_PORT"
  sed_fill=$((SECONDS - t0))
  sleep 5 # let flushes and compactions settle
  sed_rss=$(rss_kb "$SED_PID")
  log "memory: redis-server"
  t0=$SECONDS
  fill_memory "$RED_PORT"
  red_fill=$((SECONDS - t0))
  red_used=$(redis-cli -h "$HOST" -p "$RED_PORT" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }')
  red_rss=$(rss_kb "$RED_PID")
  sed_du=$(du -sb "$SED_DIR" | cut -f1)
  red_du=$(du -sb "$RED_DIR" | cut -f1)

  log "memory: restarting sediment after SIGTERM"
  stop_server "$SED_PID"
  time_restart sediment "$MEMORY_ENTRIES"
  sed_term=$RESTART_MS
  log "memory: restarting sediment after SIGKILL (10,000 more entries first)"
  redis-benchmark -h "$HOST" -p "$SED_PORT" -c 8 -P 100 -n 10000 -q XADD bench:mem '*' d x >/dev/null 2>&1 ||
    die "adding entries before the SIGKILL failed"
  kill -KILL "$SED_PID"
  wait "$SED_PID" 2>/dev/null || true
  time_restart sediment $((MEMORY_ENTRIES + 10000))
  sed_kill=$RESTART_MS
  log "memory: restarting redis-server after SIGTERM (it loads its AOF)"
  stop_server "$RED_PID"
  time_restart redis "$MEMORY_ENTRIES"
  red_term=$RESTART_MS

  echo
  echo "memory: $MEMORY_ENTRIES stream entries of 64 bytes in one stream (XADD * d <64 bytes>, -c 8 -P 100)"
  echo "sediment ${SED_VERSION:-?} vs redis-server ${RED_VERSION:-?}, appendfsync everysec on both; load average $(loadavg)"
  echo
  echo "fill time: sediment ${sed_fill}s, redis ${red_fill}s"
  echo "sediment VmRSS:         $((sed_rss / 1024)) MiB"
  echo "redis used_memory:      $((red_used / 1048576)) MiB (VmRSS $((red_rss / 1024)) MiB)"
  awk -v s="$sed_rss" -v r="$red_used" 'BEGIN { printf "sediment RSS / redis used_memory: %.3f (target <= 0.25)\n", s * 1024 / r }'
  echo "data directory:         sediment $((sed_du / 1048576)) MiB, redis $((red_du / 1048576)) MiB"
  echo "restart to first reply: sediment ${sed_term} ms after SIGTERM, ${sed_kill} ms after SIGKILL; redis ${red_term} ms after SIGTERM"
}

# ---------------------------------------------------------------- large values

# disk_written pid: bytes pid has caused to be written to storage (/proc/PID/io).
disk_written() { awk '$1 == "write_bytes:" { print $2 }' "/proc/$1/io"; }

# run_large server port pid test size n: one redis-benchmark run of test
# (set, get, hset or xadd) with values of size bytes over 1,000 keys (xadd:
# one stream capped at about 1,000 entries, the value given whole on the
# command line, since -d applies to the built-in tests only); prints
# "rps cpu_us_per_request disk_bytes_per_value_byte".
run_large() {
  local server=$1 port=$2 pid=$3 test=$4 size=$5 n=$6 out rps t0 t1 w0 w1
  local args=(-t "$test")
  if [[ $test == xadd ]]; then
    args=(XADD bench:large:s MAXLEN '~' 1000 '*' f "$(head -c "$size" /dev/zero | tr '\0' x)")
  fi
  t0=$(cpu_ticks "$pid")
  w0=$(disk_written "$pid")
  if ! out=$(timeout "$TIMEOUT" redis-benchmark -h "$HOST" -p "$port" -c 20 -n "$n" -r 1000 -d "$size" -q --csv "${args[@]}" 2>"$WORK/bench.err"); then
    cat "$WORK/bench.err" >&2
    die "redis-benchmark failed or timed out ($server, $test, -d $size)"
  fi
  sleep 2 # let the flushes and compactions the run started write
  t1=$(cpu_ticks "$pid")
  w1=$(disk_written "$pid")
  rps=$(awk -F'","' 'NR > 1 { gsub(/"/, "", $2); print $2; exit }' <<<"${out//$'\r'/}")
  [[ $rps =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "cannot parse redis-benchmark output: $out"
  awk -v r="$rps" -v d=$((t1 - t0)) -v w=$((w1 - w0)) -v n="$n" -v sz="$size" -v t="$test" \
    'BEGIN { printf "%s %.1f %s\n", r, d * 10000 / n, (t == "get") ? "-" : sprintf("%.2f", w / (n * sz)) }'
}

# prefault_memory touches PREFAULT_MB MiB of memory (default: available
# less 3 GiB, at most 16 GiB) through a file in /dev/shm, then frees it, so
# that the servers' page cache and heaps reuse pages the guest has used.
prefault_memory() {
  local mb=$PREFAULT_MB avail shm
  avail=$(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo)
  if [[ -z $mb ]]; then
    mb=16384
  fi
  [[ $mb =~ ^[0-9]+$ ]] || die "PREFAULT_MB must be a number of MiB, got '$mb'"
  # Never more than the memory available less 3 GiB, nor than tmpfs holds.
  ((mb <= avail - 3072)) || mb=$((avail - 3072))
  [[ -d /dev/shm ]] || return 0
  shm=$(df --output=avail -m /dev/shm | tail -1 | tr -d ' ')
  [[ $shm =~ ^[0-9]+$ ]] || return 0
  ((mb <= shm - 64)) || mb=$((shm - 64))
  ((mb > 0)) || return 0
  local f=/dev/shm/sediment-bench-prefault.$$ start=$SECONDS
  head -c "${mb}M" /dev/zero >"$f" 2>/dev/null
  rm -f "$f"
  log "touched $mb MiB of memory in $((SECONDS - start)) s (PREFAULT_MB)"
}

# large_part runs SET, HSET, XADD and GET with values of each LARGE_SIZES size,
# LARGE_BYTES of values per run (GET reads what SET wrote), on sediment
# then redis-server, and prints the table.
large_part() {
  local size n test sed red
  prefault_memory
  log "large values: sizes $LARGE_SIZES, $LARGE_BYTES bytes of values per run, 20 clients, 1,000 keys"
  echo
  echo "large values: redis-benchmark -c 20 -r 1000 -d SIZE, LARGE_BYTES=$LARGE_BYTES bytes of values per run"
  echo "sediment ${SED_VERSION:-?} vs redis-server ${RED_VERSION:-?}, appendfsync everysec on both; load average $(loadavg)"
  echo "disk = bytes written to storage (/proc/PID/io write_bytes, the run plus 2 s) per value byte"
  echo
  local FMT='%-5s %7s %12s %12s %7s %10s %10s %8s %8s\n'
  # shellcheck disable=SC2059
  printf "$FMT" test size "sed ops/s" "redis ops/s" ratio "sed cpu µs" "red cpu µs" "sed disk" "red disk"
  for size in $LARGE_SIZES; do
    n=$((LARGE_BYTES / size))
    for test in set hset xadd get; do
      sed=$(run_large sediment "$SED_PORT" "$SED_PID" "$test" "$size" "$n")
      red=$(run_large redis "$RED_PORT" "$RED_PID" "$test" "$size" "$n")
      # shellcheck disable=SC2086
      set -- $sed $red
      # shellcheck disable=SC2059
      printf "$FMT" "$test" "$size" "$1" "$4" "$(awk -v s="$1" -v r="$4" 'BEGIN { printf "%.2f", s / r }')" "$2" "$5" "$3" "$6"
    done
  done
}

# ---------------------------------------------------------------- churn

# churn_units prints the churn runs, one a line: each workload of
# CHURN_WORKLOADS on its own, except pel-probe, which runs together with the
# group-ack before it (it probes that workload's stream).
churn_units() {
  local w line=""
  for w in "${CHURN_UNITS_IN[@]}"; do
    if [[ $w == pel-probe ]]; then
      line+=",pel-probe"
      continue
    fi
    if [[ -n $line ]]; then echo "$line"; fi
    line=$w
  done
  if [[ -n $line ]]; then echo "$line"; fi
}

# run_churn server port pid unit csv: one churnbench run of the workloads
# in unit; appends its CSV rows (not its header line) to csv.
run_churn() {
  local server=$1 port=$2 pid=$3 unit=$4 csv=$5 count limit
  count=$(tr -cd , <<<"$unit" | wc -c)
  limit=$((CHURN_MAX_TIME * (count + 1) + 120))
  log "churn: $unit on $server"
  if ! timeout "$limit" "$CHURNBENCH_BIN" -addr "$HOST:$port" -pid "$pid" -workloads "$unit" \
    -n "$CHURN_N" -blocks "$CHURN_BLOCKS" -max-time "${CHURN_MAX_TIME}s" -probe-n "$CHURN_PROBE_N" \
    -csv -v >"$WORK/churn.out"; then
    die "churnbench failed or timed out ($server, $unit)"
  fi
  tail -n +2 "$WORK/churn.out" >>"$csv"
}

# churn_report list sediment.csv redis.csv prints one table per workload
# (list: the output of churnbench -list; each CSV starts with its header):
# per block, each server's ms/op and CPU µs/op and the ratio redis ms /
# sediment ms, then the summary figures against their targets.
churn_report() {
  awk -v max_time="$CHURN_MAX_TIME" '
    # pad returns s right-aligned (or left-aligned if left) to width
    # characters, counting a UTF-8 "µ" as one whatever the awk.
    function pad(s, width, left,   n, t) {
      t = s
      n = length(s) - gsub(/µ/, "", t) * (length("µ") - 1)
      while (n++ < width) s = left ? s " " : " " s
      return s
    }
    function row(a, b, c, d, e, f) {
      print pad(a, 14, 1) pad(b, 16) pad(c, 14) pad(d, 8) pad(e, 20) pad(f, 17)
    }
    function msCell(srv, k) {
      if (!((srv, k) in ms)) return "-"
      return sprintf("%.4f", ms[srv, k]) (part[srv, k] ? "*" : "")
    }
    function cpuCell(srv, k) {
      if (!((srv, k) in cpu) || cpu[srv, k] == "") return "-"
      return sprintf("%.1f", cpu[srv, k])
    }
    FNR == 1 { file++ }
    file == 1 { i = index($0, "\t"); desc[substr($0, 1, i - 1)] = substr($0, i + 1); next }
    FNR == 1 { next }
    {
      split($0, f, ",")
      if (f[3] != "all") next
      srv = file == 2 ? "s" : "r"
      w = f[1]; k = w SUBSEP f[2]
      if (!(w in seen)) { seen[w] = 1; wl[++nw] = w }
      if (!(k in seen)) { seen[k] = 1; label[w, ++nl[w]] = f[2] }
      ms[srv, k] = f[5]; cpu[srv, k] = f[6]; part[srv, k] = f[7] == 1; ops[srv, k] = f[4]
      if (!((srv, w) in first)) first[srv, w] = k
      last[srv, w] = k
    }
    END {
      for (i = 1; i <= nw; i++) {
        w = wl[i]
        printf "\n%s: %s\n", w, desc[w]
        row("block", "sediment ms/op", "redis ms/op", "ratio", "sediment cpu µs/op", "redis cpu µs/op")
        worst = ""; notes = ""
        for (j = 1; j <= nl[w]; j++) {
          l = label[w, j]; k = w SUBSEP l
          ratio = "-"
          if ((("s", k) in ms) && (("r", k) in ms) && ms["s", k] > 0) {
            r = ms["r", k] / ms["s", k]; ratio = sprintf("%.2f", r)
            if (worst == "" || r < worst) { worst = r; worstAt = l }
          }
          what = (l ~ /^[0-9]+$/ ? "block " : "") l
          if (part["s", k]) notes = notes sprintf("* sediment: %s cut short by CHURN_MAX_TIME=%ss after %d commands\n", what, max_time, ops["s", k])
          if (part["r", k]) notes = notes sprintf("* redis: %s cut short by CHURN_MAX_TIME=%ss after %d commands\n", what, max_time, ops["r", k])
          row(l, msCell("s", k), msCell("r", k), ratio, cpuCell("s", k), cpuCell("r", k))
        }
        if (label[w, 1] ~ /^[0-9]+$/) {
          lf = "n/a"; rlf = "n/a"
          if (first["s", w] != last["s", w] && ms["s", first["s", w]] > 0)
            lf = sprintf("%.2f", ms["s", last["s", w]] / ms["s", first["s", w]])
          if (first["r", w] != last["r", w] && ms["r", first["r", w]] > 0)
            rlf = sprintf("%.2f", ms["r", last["r", w]] / ms["r", first["r", w]])
          verdict = lf != "n/a" && lf + 0 <= 1.2 ? "ok" : "MISSED"
          if (part["s", last["s", w]]) verdict = "MISSED: did not finish"
          printf "sediment last/first block: %s (target <= 1.2: %s); redis last/first block: %s\n", lf, verdict, rlf
        }
        if (worst == "") printf "worst ratio: n/a\n"
        else printf "worst ratio: %.2f at %s (target >= 0.5: %s)\n", worst, (label[w, 1] ~ /^[0-9]+$/ ? "block " : "") worstAt, (worst >= 0.5 ? "ok" : "MISSED")
        printf "%s", notes
      }
    }' "$@"
}

# churn_part runs each churn unit against Sediment, then redis-server, and
# prints the side-by-side tables.
churn_part() {
  local unit LOAD_BEFORE LOAD_AFTER START ELAPSED
  local sed_csv=$WORK/churn-sediment.csv red_csv=$WORK/churn-redis.csv
  local header=workload,block,command,ops,ms_per_op,cpu_us_per_op,partial
  echo "$header" >"$sed_csv"
  echo "$header" >"$red_csv"
  log "churn: n=$CHURN_N blocks=$CHURN_BLOCKS workloads=$CHURN_WORKLOADS max-time=${CHURN_MAX_TIME}s per workload and server"
  LOAD_BEFORE=$(loadavg)
  START=$SECONDS
  while IFS= read -r unit; do
    run_churn sediment "$SED_PORT" "$SED_PID" "$unit" "$sed_csv"
    run_churn redis "$RED_PORT" "$RED_PID" "$unit" "$red_csv"
  done < <(churn_units)
  ELAPSED=$((SECONDS - START))
  LOAD_AFTER=$(loadavg)
  log "churn runs took ${ELAPSED}s"
  if [[ -n $CHURN_OUT ]]; then
    cp "$sed_csv" "$red_csv" "$CHURN_OUT/"
    log "churn CSVs written to $CHURN_OUT"
  fi

  echo
  echo "churn: one client, unpipelined, CHURN_N=$CHURN_N commands per workload in $CHURN_BLOCKS blocks;"
  echo "an op is one command (group-ack and xdel-queue run cycles of 3); pel-probe: $CHURN_PROBE_N calls per command"
  echo "sediment ${SED_VERSION:-?} vs redis-server ${RED_VERSION:-?}, appendfsync everysec on both"
  echo "$(nproc 2>/dev/null || echo '?') CPUs; load average before: $LOAD_BEFORE, after: $LOAD_AFTER; runs took ${ELAPSED}s"
  echo "ratio = redis ms/op / sediment ms/op (sediment's throughput relative to redis's);"
  echo "cpu = server user+system time per command, from /proc/PID/stat (10 ms ticks)"
  churn_report <(echo "$CHURN_LIST") "$sed_csv" "$red_csv"
}

# ---------------------------------------------------------------- blocked

# run_blocked server port pid workers csv: one churnbench run of the
# blocked workload with that many workers; appends its CSV row to csv. A
# wrong delivery (an entry received twice or never) fails the run.
run_blocked() {
  local server=$1 port=$2 pid=$3 workers=$4 csv=$5 limit
  limit=$((120 + BLOCKED_N / 20 + workers / 10))
  log "blocked: W=$workers on $server"
  if ! timeout "$limit" "$CHURNBENCH_BIN" -addr "$HOST:$port" -pid "$pid" -workloads blocked \
    -n "$BLOCKED_N" -workers "$workers" -csv -v >"$WORK/blocked.out"; then
    cat "$WORK/blocked.out" >&2
    die "churnbench failed or timed out ($server, blocked, W=$workers)"
  fi
  tail -n +2 "$WORK/blocked.out" >>"$csv"
}

# blocked_report sediment.csv redis.csv prints one row per worker count
# (each CSV starts with its header), with the median of each figure over
# the runs, then the summary figures against their targets.
blocked_report() {
  awk '
    # med returns the median of the space-separated numbers in list, or "".
    function med(list,   v, n, i, j, t) {
      n = split(list, v, " ")
      if (n == 0) return ""
      for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    function pad(s, width, left,   n, t) {
      t = s
      n = length(s) - gsub(/µ/, "", t) * (length("µ") - 1)
      while (n++ < width) s = left ? s " " : " " s
      return s
    }
    function row(a, b, c, d, e, f, g, h) {
      print pad(a, 8, 1) pad(b, 12) pad(c, 14) pad(d, 12) pad(e, 14) pad(f, 14) pad(g, 16) pad(h, 13)
    }
    function cell(v, fmt) { return v == "" ? "-" : sprintf(fmt, v) }
    FNR == 1 { file++; next }
    {
      split($0, f, ",")
      srv = file == 1 ? "s" : "r"
      w = f[2]
      if (!(w in seen)) { seen[w] = 1; ws[++nw] = w }
      epsL[srv, w] = epsL[srv, w] " " f[6]; p99L[srv, w] = p99L[srv, w] " " f[8]; src = f[10]
      if (f[9] != "") cpuL[srv, w] = cpuL[srv, w] " " f[9]
      if (f[11] > 0) notes = notes sprintf("%s W=%d: %d BLOCK timeouts within the measured time (each re-sends XREADGROUP)\n", srv == "s" ? "sediment" : "redis", w, f[11])
      if (f[14] == 1) notes = notes sprintf("%s W=%d: stopped early\n", srv == "s" ? "sediment" : "redis", w)
    }
    END {
      for (k in epsL) eps[k] = med(epsL[k])
      for (k in p99L) p99[k] = med(p99L[k])
      for (k in cpuL) cpu[k] = med(cpuL[k])
      printf "cpu = server CPU per delivered entry, from /proc/PID/%s\n\n", src == "schedstat" ? "task/*/schedstat (ns)" : "stat (10 ms ticks)"
      row("workers", "sed entr/s", "redis entr/s", "sed p99 ms", "redis p99 ms", "sed cpu µs/e", "redis cpu µs/e", "cpu sed/red")
      worst = ""; lo = ""; hi = ""
      for (i = 1; i <= nw; i++) {
        w = ws[i]
        ratio = "-"
        if (cpu["s", w] != "" && cpu["r", w] > 0) {
          r = cpu["s", w] / cpu["r", w]; ratio = sprintf("%.2f", r)
          if (worst == "" || r > worst) { worst = r; worstAt = w }
        }
        row(w, cell(eps["s", w], "%.0f"), cell(eps["r", w], "%.0f"), cell(p99["s", w], "%.3f"), cell(p99["r", w], "%.3f"),
          cell(cpu["s", w], "%.1f"), cell(cpu["r", w], "%.1f"), ratio)
        if (lo == "" || w + 0 < lo + 0) lo = w
        if (hi == "" || w + 0 > hi + 0) hi = w
      }
      if (worst == "") print "worst cpu sediment/redis: n/a"
      else printf "worst cpu sediment/redis: %.2f at W=%s (target <= 2: %s)\n", worst, worstAt, worst <= 2 ? "ok" : "MISSED"
      if (lo == hi || cpu["s", lo] == "" || cpu["s", lo] <= 0) {
        print "sediment cpu per entry, largest W / smallest W: n/a (needs two worker counts)"
      } else {
        g = cpu["s", hi] / cpu["s", lo]
        rg = (cpu["r", lo] > 0 && cpu["r", hi] != "") ? sprintf("%.2f", cpu["r", hi] / cpu["r", lo]) : "n/a"
        printf "sediment cpu per entry W=%s / W=%s: %.2f (target <= 1.5: %s); redis: %s\n", hi, lo, g, g <= 1.5 ? "ok" : "MISSED", rg
      }
      printf "%s", notes
    }' "$@"
}

# blocked_part runs the blocked workload for each worker count, against
# Sediment, then redis-server, and prints the side-by-side table.
blocked_part() {
  local w round LOAD_BEFORE LOAD_AFTER START ELAPSED
  local sed_csv=$WORK/blocked-sediment.csv red_csv=$WORK/blocked-redis.csv
  local header=workload,workers,entries,delivered,seconds,entries_per_s,xadd_ms_per_op,xadd_p99_ms,cpu_us_per_entry,cpu_source,timeouts,duplicates,missing,partial
  echo "$header" >"$sed_csv"
  echo "$header" >"$red_csv"
  log "blocked: n=$BLOCKED_N workers=$BLOCKED_WORKERS rounds=$BLOCKED_ROUNDS (open-file limit $(ulimit -Sn))"
  LOAD_BEFORE=$(loadavg)
  START=$SECONDS
  for round in $(seq 1 "$BLOCKED_ROUNDS"); do
    ((BLOCKED_ROUNDS == 1)) || log "blocked: round $round/$BLOCKED_ROUNDS"
    for w in "${BLOCKED_WS[@]}"; do
      run_blocked sediment "$SED_PORT" "$SED_PID" "$w" "$sed_csv"
      run_blocked redis "$RED_PORT" "$RED_PID" "$w" "$red_csv"
    done
  done
  ELAPSED=$((SECONDS - START))
  LOAD_AFTER=$(loadavg)
  log "blocked runs took ${ELAPSED}s"
  if [[ -n $CHURN_OUT ]]; then
    cp "$sed_csv" "$red_csv" "$CHURN_OUT/"
    log "blocked CSVs written to $CHURN_OUT"
  fi

  echo
  echo "blocked: W workers, one connection each, loop XREADGROUP GROUP g c<i> COUNT 1 BLOCK 2000 STREAMS key >;"
  echo "one producer adds BLOCKED_N=$BLOCKED_N entries, XADD key * f v, one at a time; every entry reached exactly one worker"
  echo "medians of BLOCKED_ROUNDS=$BLOCKED_ROUNDS rounds (W by W, sediment then redis)"
  echo "sediment ${SED_VERSION:-?} vs redis-server ${RED_VERSION:-?}, appendfsync everysec on both"
  echo "$(nproc 2>/dev/null || echo '?') CPUs; load average before: $LOAD_BEFORE, after: $LOAD_AFTER; runs took ${ELAPSED}s"
  echo "entr/s = entries delivered per second; p99 = the producer's XADD round trip, 99th percentile"
  blocked_report "$sed_csv" "$red_csv"
}

# ---------------------------------------------------------------- groups

# run_groups server port pid csv: one churnbench run of the groups
# workload (its max run, then its rate run); appends its two CSV rows to
# csv. A wrong delivery (an entry received twice or never, or left pending)
# fails the run.
run_groups() {
  local server=$1 port=$2 pid=$3 csv=$4 limit
  limit=$((180 + 2 * GROUPS_DURATION + GROUPS_N / 500))
  log "groups: max run (n=$GROUPS_N) and rate run ($GROUPS_RATE/s for ${GROUPS_DURATION}s) on $server"
  if ! timeout "$limit" "$CHURNBENCH_BIN" -addr "$HOST:$port" -pid "$pid" -workloads groups \
    -n "$GROUPS_N" -rate "$GROUPS_RATE" -duration "${GROUPS_DURATION}s" \
    -producers "$GROUPS_PRODUCERS" -consumers "$GROUPS_CONSUMERS" -csv -v >"$WORK/groups.out"; then
    cat "$WORK/groups.out" >&2
    die "churnbench failed or timed out ($server, groups)"
  fi
  tail -n +2 "$WORK/groups.out" >>"$csv"
}

# groups_report sediment.csv redis.csv prints the side-by-side table of
# the max and rate runs (each CSV starts with its header), the latency
# detail per server, then the figures against their targets.
groups_report() {
  awk '
    function pad(s, width, left,   n, t) {
      t = s
      n = length(s) - gsub(/µ/, "", t) * (length("µ") - 1)
      while (n++ < width) s = left ? s " " : " " s
      return s
    }
    function row(a, b, c, d, e, f, g, h, i) {
      print pad(a, 5, 1) pad(b, 11) pad(c, 12) pad(d, 14) pad(e, 7) pad(f, 12) pad(g, 14) pad(h, 14) pad(i, 16)
    }
    function drow(a, b, c, d, e, f, g, h, i) {
      print pad(a, 9, 1) pad(b, 5, 1) pad(c, 10) pad(d, 10) pad(e, 10) pad(f, 13) pad(g, 7) pad(h, 10) pad(i, 8)
    }
    function cell(v, fmt) { return v == "" ? "-" : sprintf(fmt, v) }
    FNR == 1 { file++; next }
    {
      split($0, f, ",")
      srv = file == 1 ? "s" : "r"
      m = f[2]
      if (!(m in seen)) { seen[m] = 1; modes[++nm] = m }
      offered[m] = f[5]; mps[srv, m] = f[9]; p50[srv, m] = f[10]; p99[srv, m] = f[11]; mx[srv, m] = f[12]
      p99s[srv, m] = f[13]; batch[srv, m] = f[14]; cpu[srv, m] = f[15]; src = f[16]
      timeouts[srv, m] = f[17]; unsent[srv, m] = f[20]; part[srv, m] = f[21]
    }
    END {
      printf "cpu = server CPU per acknowledged entry, from /proc/PID/%s\n\n", (src == "schedstat" ? "task/*/schedstat (ns)" : "stat (10 ms ticks)")
      row("mode", "offered/s", "sed msgs/s", "redis msgs/s", "ratio", "sed p99 ms", "redis p99 ms", "sed cpu µs/m", "redis cpu µs/m")
      for (i = 1; i <= nm; i++) {
        m = modes[i]
        ratio = "-"
        if (mps["s", m] != "" && mps["r", m] > 0) ratio = sprintf("%.2f", mps["s", m] / mps["r", m])
        row(m, (offered[m] > 0 ? offered[m] : "-"), cell(mps["s", m], "%.0f"), cell(mps["r", m], "%.0f"), ratio,
          cell(p99["s", m], "%.3f"), cell(p99["r", m], "%.3f"), cell(cpu["s", m], "%.1f"), cell(cpu["r", m], "%.1f"))
      }
      print ""
      drow("server", "mode", "p50 ms", "p99 ms", "max ms", "p99 send ms", "batch", "timeouts", "unsent")
      for (k = 1; k <= 2; k++) {
        srv = k == 1 ? "s" : "r"
        for (i = 1; i <= nm; i++) {
          m = modes[i]
          drow((srv == "s" ? "sediment" : "redis"), m, cell(p50[srv, m], "%.3f"), cell(p99[srv, m], "%.3f"), cell(mx[srv, m], "%.3f"),
            cell(p99s[srv, m], "%.3f"), cell(batch[srv, m], "%.1f"), cell(timeouts[srv, m], "%d"), cell(unsent[srv, m], "%d"))
        }
      }
      if (mps["s", "max"] == "" || mps["r", "max"] <= 0) print "max run msgs/s sediment/redis: n/a"
      else {
        r = mps["s", "max"] / mps["r", "max"]
        printf "max run msgs/s sediment/redis: %.2f (target >= 0.8: %s)\n", r, (r >= 0.8 ? "ok" : "MISSED")
      }
      if (p99["s", "rate"] == "") print "rate run p99: n/a"
      else {
        v = (p99["s", "rate"] <= 2 ? "ok" : "MISSED")
        if (unsent["s", "rate"] > 0) v = "MISSED: fell behind the schedule"
        printf "p99 end to end at %s msgs/s offered: sediment %.3f ms (target <= 2 ms: %s), redis %.3f ms%s\n",
          offered["rate"], p99["s", "rate"], v, p99["r", "rate"], (unsent["r", "rate"] > 0 ? " (fell behind the schedule)" : "")
        printf "achieved at %s msgs/s offered: sediment %.0f msgs/s, redis %.0f msgs/s\n", offered["rate"], mps["s", "rate"], mps["r", "rate"]
      }
      for (k = 1; k <= 2; k++) {
        srv = k == 1 ? "s" : "r"
        for (i = 1; i <= nm; i++) {
          m = modes[i]
          if (part[srv, m] == 1) printf "%s %s run: the producers stopped early (%d scheduled entries unsent)\n", (srv == "s" ? "sediment" : "redis"), m, unsent[srv, m]
        }
      }
    }' "$@"
}

# groups_part runs the groups workload against Sediment, then redis-server,
# and prints the side-by-side table.
groups_part() {
  local LOAD_BEFORE LOAD_AFTER START ELAPSED
  local sed_csv=$WORK/groups-sediment.csv red_csv=$WORK/groups-redis.csv
  local header=workload,mode,producers,consumers,offered_per_s,entries,acked,seconds,msgs_per_s,p50_ms,p99_ms,max_ms,p99_send_ms,batch,cpu_us_per_msg,cpu_source,timeouts,duplicates,missing,unsent,partial
  echo "$header" >"$sed_csv"
  echo "$header" >"$red_csv"
  log "groups: n=$GROUPS_N rate=$GROUPS_RATE duration=${GROUPS_DURATION}s producers=$GROUPS_PRODUCERS consumers=$GROUPS_CONSUMERS"
  LOAD_BEFORE=$(loadavg)
  START=$SECONDS
  run_groups sediment "$SED_PORT" "$SED_PID" "$sed_csv"
  run_groups redis "$RED_PORT" "$RED_PID" "$red_csv"
  ELAPSED=$((SECONDS - START))
  LOAD_AFTER=$(loadavg)
  log "groups runs took ${ELAPSED}s"
  if [[ -n $CHURN_OUT ]]; then
    cp "$sed_csv" "$red_csv" "$CHURN_OUT/"
    log "groups CSVs written to $CHURN_OUT"
  fi

  echo
  echo "groups: $GROUPS_PRODUCERS producers, one connection each, XADD key * d <64-byte payload>, one at a time;"
  echo "$GROUPS_CONSUMERS consumers, one connection each, loop XREADGROUP GROUP g c<i> COUNT 10 BLOCK 100 STREAMS key > + XACK key g <ids>"
  echo "max: GROUPS_N=$GROUPS_N entries as fast as replies come; rate: GROUPS_RATE=$GROUPS_RATE entries/s offered for GROUPS_DURATION=${GROUPS_DURATION}s"
  echo "every entry received exactly once and acknowledged, XPENDING 0 at the end, on both servers"
  echo "sediment ${SED_VERSION:-?} vs redis-server ${RED_VERSION:-?}, appendfsync everysec on both"
  echo "$(nproc 2>/dev/null || echo '?') CPUs; load average before: $LOAD_BEFORE, after: $LOAD_AFTER; runs took ${ELAPSED}s"
  echo "msgs/s = entries received and acknowledged per second; ratio = sediment / redis"
  echo "latency = XREADGROUP reply received - the entry's scheduled send time (p99 send: - its actual send time);"
  echo "batch = entries per XREADGROUP reply"
  groups_report "$sed_csv" "$red_csv"
}

# ---------------------------------------------------------------- zset

# zset_part runs bin/zrankbench for each ZSET_SIZES size against both
# servers (it alternates them command by command) and prints its tables.
zset_part() {
  local n limit LOAD_BEFORE LOAD_AFTER START ELAPSED
  log "zset: sizes=${ZSET_NS[*]} calls=$ZSET_CALLS"
  LOAD_BEFORE=$(loadavg)
  START=$SECONDS
  for n in "${ZSET_NS[@]}"; do
    log "zset: n=$n (fill, then $ZSET_CALLS calls per command and server)"
    limit=$((300 + n / 5000 + ZSET_CALLS / 10))
    if ! timeout "$limit" "$ZRANKBENCH_BIN" -addr "$HOST:$SED_PORT,$HOST:$RED_PORT" -name sediment,redis \
      -pid "$SED_PID,$RED_PID" -n "$n" -calls "$ZSET_CALLS" >"$WORK/zset-$n.out"; then
      cat "$WORK/zset-$n.out" >&2
      die "zrankbench failed or timed out (n=$n)"
    fi
  done
  ELAPSED=$((SECONDS - START))
  LOAD_AFTER=$(loadavg)
  log "zset runs took ${ELAPSED}s"

  echo
  echo "zset: sorted-set reads by rank and score on one set, one client, unpipelined (cmd/zrankbench)"
  echo "sediment ${SED_VERSION:-?} vs redis-server ${RED_VERSION:-?}, appendfsync everysec on both"
  echo "$(nproc 2>/dev/null || echo '?') CPUs; load average before: $LOAD_BEFORE, after: $LOAD_AFTER; runs took ${ELAPSED}s"
  echo "mean 1/2, cpu 1/2 = sediment / redis (above 1: sediment is slower)"
  for n in "${ZSET_NS[@]}"; do
    echo
    cat "$WORK/zset-$n.out"
  done
}

# ---------------------------------------------------------------- pubsub

# pubsub_part runs bin/pubsubbench for PUBSUB_SUBS against both servers
# (server by server for each count) and prints its table.
pubsub_part() {
  local LOAD_BEFORE LOAD_AFTER START ELAPSED
  log "pubsub: subscribers=${PUBSUB_SS[*]} n=$PUBSUB_N"
  LOAD_BEFORE=$(loadavg)
  START=$SECONDS
  if ! timeout 600 "$PUBSUBBENCH_BIN" -addr "$HOST:$SED_PORT,$HOST:$RED_PORT" -name sediment,redis \
    -pid "$SED_PID,$RED_PID" -subs "$(tr ' ' , <<<"${PUBSUB_SS[*]}")" -n "$PUBSUB_N" >"$WORK/pubsub.out"; then
    cat "$WORK/pubsub.out" >&2
    die "pubsubbench failed or timed out"
  fi
  ELAPSED=$((SECONDS - START))
  LOAD_AFTER=$(loadavg)

  echo
  echo "pubsub: one publisher, PUBLISH to S subscribers of one channel (cmd/pubsubbench)"
  echo "sediment ${SED_VERSION:-?} (embedded NATS) vs redis-server ${RED_VERSION:-?}"
  echo "$(nproc 2>/dev/null || echo '?') CPUs; load average before: $LOAD_BEFORE, after: $LOAD_AFTER; runs took ${ELAPSED}s"
  cat "$WORK/pubsub.out"
}

# ---------------------------------------------------------------- otel

# otel_part: see the header. The three servers run side by side with the
# main two idle.
otel_part() {
  local sink_port sink_pid endpoint mode port pid dir round workload pipe LOAD_BEFORE START ELAPSED
  local -A OPORT OPID
  local -a envs
  sink_port=$(free_port "$SED_PORT")
  "$OTLPSINK_BIN" -addr "$HOST:$sink_port" >"$WORK/otlpsink.out" 2>&1 &
  sink_pid=$!
  EXTRA_PIDS+=" $sink_pid"
  endpoint="http://$HOST:$sink_port"
  for mode in off sampled0 sampled0.01 sampled1; do
    case $mode in
      off) envs=() ;;
      sampled0) envs=("OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint" OTEL_TRACES_SAMPLER=always_off) ;;
      sampled0.01) envs=("OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint" OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=0.01) ;;
      sampled1) envs=("OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint" OTEL_TRACES_SAMPLER=always_on) ;;
    esac
    port=$(free_port "$sink_port")
    dir="$WORK/otel-$mode"
    mkdir -p "$dir"
    env "${envs[@]}" "$SEDIMENT_BIN" --bind "$HOST" --port "$port" --dir "$dir" --appendfsync everysec \
      --nats-listen off --log-level warn >>"$WORK/otel-$mode.log" 2>&1 &
    pid=$!
    EXTRA_PIDS+=" $pid"
    wait_ready "sediment-$mode" "$pid" "$port" "$WORK/otel-$mode.log" || die "sediment-$mode could not start on port $port"
    OPORT[$mode]=$port
    OPID[$mode]=$pid
  done
  log "otel: n=$N clients=$CLIENTS rounds=$ROUNDS pipelines=${PIPELINES[*]}, OTLP sink on $endpoint"
  LOAD_BEFORE=$(loadavg)
  START=$SECONDS
  for round in $(seq 1 "$ROUNDS"); do
    log "otel round $round/$ROUNDS"
    for workload in set get xadd; do
      for pipe in "${PIPELINES[@]}"; do
        for mode in off sampled0 sampled0.01 sampled1; do
          run_bench "otel-$mode" "${OPORT[$mode]}" "${OPID[$mode]}" "$workload" "$pipe"
        done
      done
    done
  done
  ELAPSED=$((SECONDS - START))
  for mode in off sampled0 sampled0.01 sampled1; do
    stop_server "${OPID[$mode]}"
  done
  stop_server "$sink_pid"

  echo
  echo "telemetry cost: redis-benchmark -c $CLIENTS -n $N -r 100000, median of $ROUNDS rounds (requests/s)"
  echo "sediment ${SED_VERSION:-?}: off (no OTEL_*), s0 (OTLP endpoint, OTEL_TRACES_SAMPLER=always_off: metrics only),"
  echo "s.01 (traceidratio 0.01), s1 (always_on)"
  echo "$(nproc 2>/dev/null || echo '?') CPUs; load average before: $LOAD_BEFORE, after: $(loadavg); runs took ${ELAPSED}s"
  echo "$(cat "$WORK/otlpsink.out")"
  echo
  local FMT='%-6s %4s %10s %7s %7s %7s %9s %9s %9s %9s\n' name off s0 s01 s1
  # shellcheck disable=SC2059
  printf "$FMT" test pipe "off ops/s" "s0/off" "s.01/off" "s1/off" "off cpu µs" "s0 cpu µs" "s.01 cpu µs" "s1 cpu µs"
  for name in SET GET XADD; do
    for pipe in "${PIPELINES[@]}"; do
      # shellcheck disable=SC2086
      off=$(median ${RESULTS["otel-off|$name|$pipe"]})
      # shellcheck disable=SC2086
      s0=$(median ${RESULTS["otel-sampled0|$name|$pipe"]})
      # shellcheck disable=SC2086
      s01=$(median ${RESULTS["otel-sampled0.01|$name|$pipe"]})
      # shellcheck disable=SC2086
      s1=$(median ${RESULTS["otel-sampled1|$name|$pipe"]})
      # shellcheck disable=SC2059,SC2086
      printf "$FMT" "$name" "$pipe" "$off" \
        "$(awk -v a="$s0" -v b="$off" 'BEGIN { printf "%.2f", a / b }')" \
        "$(awk -v a="$s01" -v b="$off" 'BEGIN { printf "%.2f", a / b }')" \
        "$(awk -v a="$s1" -v b="$off" 'BEGIN { printf "%.2f", a / b }')" \
        "$(median ${CPU["otel-off|$name|$pipe"]})" "$(median ${CPU["otel-sampled0|$name|$pipe"]})" \
        "$(median ${CPU["otel-sampled0.01|$name|$pipe"]})" "$(median ${CPU["otel-sampled1|$name|$pipe"]})"
    done
  done
}

# ---------------------------------------------------------------- main

for part in "${PARTS[@]}"; do
  case $part in
    redis-benchmark) redis_benchmark_part ;;
    always) always_part ;;
    memory) memory_part ;;
    large) large_part ;;
    churn) churn_part ;;
    blocked) blocked_part ;;
    groups) groups_part ;;
    zset) zset_part ;;
    pubsub) pubsub_part ;;
    otel) otel_part ;;
  esac
done
