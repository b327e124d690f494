#!/bin/bash
# A/B of two checkouts of this server on one core at once, each started by its own `deno task
# start` (its own flags): both servers pinned to core 1, both loaded at the same time by wrk
# pinned to core 0, for the same seconds. Prints each one's CPU
# (user + system, all its threads) per request and the ratio B/A.
#
# Why both at once: on a shared VM the CPU a request costs drifts by 10 to 20 % from one minute to
# the next, more than most changes to a request path. Run side by side, both servers see the same
# drift, and their ratio is stable to about ±2 % (the same checkout as A and B: 0.98 to 1.02).
# Only for two servers of like cost: sharing the core costs a much cheaper one (a ceiling) more
# than a dearer one, so this server against its ceiling reads about 0.1 high (docs/bench.md).
#
#   KV_SEED=seed.sqlite3 bench/ab_one_core.sh DIR_A DIR_B [SECONDS] [PATH_OR_WRK_SCRIPT]
#
# KV_SEED: a KV file both servers start on (each on its own copy), e.g. 20,000 addresses:
#   KV_PATH=seed.sqlite3 COUNT=20000 deno run --allow-all bench/seed_addresses.ts
# The load is `GET PATH` (default /rest/books), or a wrk Lua script when the argument ends in .lua
# (e.g. one cycling through /addresses/{id}). ENV_A and ENV_B add environment variables to one
# server (e.g. ENV_B="LOG_LEVEL=warn"); C sets wrk's connections (default 32).
set -eu
A=$1
B=$2
SECONDS_=${3:-8}
LOAD=${4:-/rest/books}
SEED=${KV_SEED:?a KV file to start both servers on}
TMP=$(mktemp -d)
PA=""
PB=""
trap '[ -n "$PA$PB" ] && kill -INT $PA $PB 2>/dev/null || true; sleep 1; rm -rf "$TMP"' EXIT

start() { # dir port env
  cp "$SEED" "$TMP/$2.sqlite3"
  # The server's own variables ($3) last: ENV_B="LOG_LEVEL=warn" overrides the default level.
  (cd "$1" && env PORT="$2" GRPC_PORT=$(($2 + 1000)) GRPC_ISOLATION=inline \
    KV_PATH="$TMP/$2.sqlite3" LOG_LEVEL="${LOG_LEVEL:-info}" MAX_ADDRESSES_PER_OWNER=999999999 $3 \
    taskset -c 1 deno task start >/dev/null 2>"$TMP/$2.err") &
}
listener() { ss -ltnp "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
load() { # seconds port
  if [[ $LOAD == *.lua ]]; then
    taskset -c 0 wrk -t1 -c"${C:-32}" -d"$1"s -s "$LOAD" "http://127.0.0.1:$2" 2>&1
  else
    taskset -c 0 wrk -t1 -c"${C:-32}" -d"$1"s "http://127.0.0.1:$2$LOAD" 2>&1
  fi
}

start "$A" 18610 "${ENV_A:-}"
start "$B" 18620 "${ENV_B:-}"
for port in 18610 18620; do
  for _ in $(seq 150); do curl -s "localhost:$port/readyz" >/dev/null && break; sleep 0.2; done
done
PA=$(listener 18610)
PB=$(listener 18620)
load 3 18610 >/dev/null &
w=$!
load 3 18620 >/dev/null
wait $w
A0=$(cpu "$PA")
B0=$(cpu "$PB")
load "$SECONDS_" 18610 >"$TMP/a.out" &
w=$!
load "$SECONDS_" 18620 >"$TMP/b.out"
wait $w
A1=$(cpu "$PA")
B1=$(cpu "$PB")
NA=$(awk '/requests in/ {print $1}' "$TMP/a.out")
NB=$(awk '/requests in/ {print $1}' "$TMP/b.out")
BADA=$(awk '/Non-2xx/ {print $5}' "$TMP/a.out")
BADB=$(awk '/Non-2xx/ {print $5}' "$TMP/b.out")
# Clock ticks (1/100 s) → ns per request.
CA=$(((A1 - A0) * 10000000 / NA))
CB=$(((B1 - B0) * 10000000 / NB))
echo "A: $NA requests, $CA ns CPU each, non-2xx ${BADA:-0} | B: $NB requests, $CB ns CPU each," \
  "non-2xx ${BADB:-0} | B/A $(awk "BEGIN {printf \"%.3f\", $CB / $CA}")"
