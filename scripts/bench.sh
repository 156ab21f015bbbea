#!/usr/bin/env bash
# scripts/bench.sh — redis-benchmark against Sediment and redis-server, side by side.
#
# `make bench` builds bin/sediment and runs this script. It starts Sediment
# and a redis-server with comparable durability (AOF, appendfsync everysec,
# no RDB snapshots) on free loopback ports, each with a fresh temp data dir,
# then runs redis-benchmark for SET, GET and XADD, unpipelined and with
# -P 16, alternating the two servers test by test for ROUNDS rounds, and
# prints the median requests/s of each server and their ratio.
#
# Environment:
#   BENCH_N        requests per redis-benchmark run (default 100000)
#   ROUNDS         rounds; the median per server is reported (default 3)
#   BENCH_CLIENTS  parallel connections, redis-benchmark -c (default 50)
#   BENCH_TIMEOUT  seconds one redis-benchmark run may take (default 120)
#   SEDIMENT_BIN   the Sediment binary (default bin/sediment)
#
# Only loopback addresses are used. Both servers are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${BENCH_N:-100000}
ROUNDS=${ROUNDS:-3}
CLIENTS=${BENCH_CLIENTS:-50}
TIMEOUT=${BENCH_TIMEOUT:-120}
SEDIMENT_BIN=${SEDIMENT_BIN:-bin/sediment}
HOST=127.0.0.1
PIPELINES=(1 16)

die() { echo "bench: $*" >&2; exit 1; }
log() { echo "bench: $*" >&2; }

for v in N ROUNDS CLIENTS TIMEOUT; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
for tool in redis-server redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "$tool not found on PATH (apt-get install redis-server redis-tools)"
done
[[ -x $SEDIMENT_BIN ]] || die "$SEDIMENT_BIN not found: run 'make build' (or 'make bench')"

# ---------------------------------------------------------------- servers

SED_PID="" RED_PID=""
WORK=$(mktemp -d -t sediment-bench.XXXXXX)
SED_DIR=$(mktemp -d -t sediment-bench-data.XXXXXX)
RED_DIR=$(mktemp -d -t redis-bench-data.XXXXXX)

cleanup() {
  local pid
  for pid in $SED_PID $RED_PID; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $SED_PID $RED_PID; do
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

# start_sediment / start_redis start a server on a free port (retrying if
# the port is taken at bind time) and set *_PORT and *_PID.
start_sediment() {
  local attempt rc
  for attempt in 1 2 3 4 5; do
    SED_PORT=$(free_port "${RED_PORT:-}")
    "$SEDIMENT_BIN" --bind "$HOST" --port "$SED_PORT" --dir "$SED_DIR" --appendfsync everysec \
      --log-level warn >"$WORK/sediment.log" 2>&1 &
    SED_PID=$!
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
    redis-server --bind "$HOST" --port "$RED_PORT" --save "" --appendonly yes --appendfsync everysec \
      --dir "$RED_DIR" --daemonize no --logfile "" >"$WORK/redis.log" 2>&1 &
    RED_PID=$!
    rc=0
    wait_ready redis-server "$RED_PID" "$RED_PORT" "$WORK/redis.log" || rc=$?
    ((rc == 0)) && return
    log "port $RED_PORT was taken; retrying"
    RED_PID=""
  done
  die "could not start redis-server"
}

SED_PORT="" RED_PORT=""
start_sediment
start_redis

# Sanity: every benchmarked command must succeed on both servers, or
# redis-benchmark would happily time error replies.
for port in "$SED_PORT" "$RED_PORT"; do
  [[ $(redis-cli -h "$HOST" -p "$port" SET bench:check 1) == OK ]] || die "SET failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" GET bench:check) == 1 ]] || die "GET failed on port $port"
  [[ $(redis-cli -h "$HOST" -p "$port" XADD bench:check:s '*' f 1) =~ ^[0-9]+-[0-9]+$ ]] ||
    die "XADD failed on port $port"
done

SED_VERSION=$("$SEDIMENT_BIN" --version 2>/dev/null | awk '{print $2}')
RED_VERSION=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
log "sediment ${SED_VERSION:-?} on $HOST:$SED_PORT, redis-server ${RED_VERSION:-?} on $HOST:$RED_PORT"
log "n=$N clients=$CLIENTS rounds=$ROUNDS pipelines=${PIPELINES[*]} (appendfsync everysec on both)"

# ---------------------------------------------------------------- runs

declare -A RESULTS # "server|TEST|pipeline" -> space-separated rps values

# run_bench server port workload pipeline: one redis-benchmark run; records
# requests/s per test it reports (SET and GET for setget, XADD for xadd).
run_bench() {
  local server=$1 port=$2 workload=$3 pipe=$4 out line name rps
  local args=(-h "$HOST" -p "$port" -c "$CLIENTS" -n "$N" -r 100000 -P "$pipe" -q --csv)
  case $workload in
    setget) args+=(-t set,get) ;;
    xadd) args+=(XADD bench:s '*' f __rand_int__) ;;
  esac
  if ! out=$(timeout "$TIMEOUT" redis-benchmark "${args[@]}" 2>"$WORK/bench.err"); then
    cat "$WORK/bench.err" >&2
    die "redis-benchmark failed or timed out ($server, $workload, -P $pipe)"
  fi
  local got=0
  while IFS= read -r line; do
    line=${line%$'\r'}
    [[ $line == '"test"'* || -z $line ]] && continue
    line=${line#\"}
    name=${line%%\",\"*}
    rps=${line#*\",\"}
    rps=${rps%%\"*}
    [[ $rps =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "cannot parse redis-benchmark line: $line"
    case $name in
      SET | GET) ;;
      XADD*) name=XADD ;;
      *) continue ;;
    esac
    RESULTS["$server|$name|$pipe"]+="$rps "
    got=$((got + 1))
    log "  $(printf '%-8s %-4s P=%-2s %12s req/s' "$server" "$name" "$pipe" "$rps")"
  done <<<"$out"
  ((got > 0)) || die "no results from redis-benchmark ($server, $workload, -P $pipe): $out"
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'; }
LOAD_BEFORE=$(loadavg)
START=$SECONDS
for round in $(seq 1 "$ROUNDS"); do
  log "round $round/$ROUNDS"
  for workload in setget xadd; do
    for pipe in "${PIPELINES[@]}"; do
      run_bench sediment "$SED_PORT" "$workload" "$pipe"
      run_bench redis "$RED_PORT" "$workload" "$pipe"
    done
  done
done
ELAPSED=$((SECONDS - START))
LOAD_AFTER=$(loadavg)
log "runs took ${ELAPSED}s"

# ---------------------------------------------------------------- report

# median of the numbers given as arguments (mean of the middle two if even).
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { if (NR == 0) { print "nan"; exit }
          if (NR % 2) printf "%.2f\n", v[(NR + 1) / 2]
          else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo
echo "redis-benchmark -c $CLIENTS -n $N -r 100000, median of $ROUNDS rounds (requests/s)"
echo "sediment ${SED_VERSION:-?} vs redis-server ${RED_VERSION:-?}, appendfsync everysec on both"
echo "$(nproc 2>/dev/null || echo '?') CPUs; load average before: $LOAD_BEFORE, after: $LOAD_AFTER; runs took ${ELAPSED}s"
echo
FMT='%-6s %8s %14s %14s %16s\n'
# shellcheck disable=SC2059
printf "$FMT" test pipeline "sediment ops/s" "redis ops/s" "sediment/redis"
# shellcheck disable=SC2059
printf "$FMT" ------ -------- -------------- -------------- ----------------
for name in SET GET XADD; do
  for pipe in "${PIPELINES[@]}"; do
    # shellcheck disable=SC2086
    s=$(median ${RESULTS["sediment|$name|$pipe"]})
    # shellcheck disable=SC2086
    r=$(median ${RESULTS["redis|$name|$pipe"]})
    ratio=$(awk -v s="$s" -v r="$r" 'BEGIN { if (r > 0) printf "%.2f", s / r; else print "nan" }')
    # shellcheck disable=SC2059
    printf "$FMT" "$name" "$pipe" "$s" "$r" "$ratio"
  done
done
