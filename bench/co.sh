#!/usr/bin/env bash
# Coordinated-omission benchmark (issue 15): does the corrected latency invent
# latency below the generator's capacity, and does it still show a stall?
#
#   bench/co.sh [SECONDS=10] [USERS=4] [RATE=120]
#
# 1. healthy: a paced burst (RATE/s, USERS users, SECONDS hold) against the
#    release-built reference: raw p50/p99, corrected p50/p99 and the
#    generator's own lateness p50/p99 (target: corrected p50 within 100 µs of
#    raw p50).
# 2. stall: the same burst against `--defect stall` (every 200th request pauses the API for
#    1 s): corrected p99 must still be >= 500 ms (with the open pool the raw
#    figures see the requests the pause held too; the raw median hides it).
#
# Not a timed test: run it by hand on a quiet machine. Loopback only.
set -euo pipefail
SECS=${1:-10}; USERS=${2:-4}; RATE=${3:-120}
cd "$(dirname "$0")/.."
# TMINUS_BIN: another binary (e.g. a debug build) instead of the release one.
if [ -n "${TMINUS_BIN:-}" ]; then TM=$TMINUS_BIN; else
  cargo build --release --quiet --bin tminus
  TM=target/release/tminus
fi
WORK=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT

# start_ref NAME ARGS... : starts a reference, sets URL.
start_ref() {
  local name=$1; shift
  "$TM" reference --port 0 "$@" > "$WORK/$name.url" 2> "$WORK/$name.err" &
  PIDS+=($!)
  for _ in $(seq 50); do [ -s "$WORK/$name.url" ] && break; sleep 0.1; done
  URL=$(head -1 "$WORK/$name.url")
  case "$URL" in http://127.0.0.1:*) ;; *) echo "reference $name did not start" >&2; exit 3;; esac
}

cat > "$WORK/co.yaml" <<YAML
suite: co
load:
  id: co
  stages: [{ users: $USERS, over: 0s }, { users: $USERS, over: ${SECS}s }]
  max_rate: $RATE/s
  max_duration: $((SECS + 30))s
  requests:
    - name: count
      request: { path: /public/v1/messages/count, headers: { Authorization: "Bearer ref_load_key" } }
YAML

# run NAME URL : one burst, prints its figures.
run() {
  rm -rf "$WORK/rep"
  "$TM" run "$WORK/co.yaml" --target "$2" --report-dir "$WORK/rep" > /dev/null 2> "$WORK/$1.run.err" || true
  python3 - "$1" "$WORK/rep/load-co-co.json" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
d = json.load(open(path)); o = d["overall"]
r, c, l = o["latency_raw"], o["latency_corrected"], o["generator_lateness"]
print(f"{name:8} requests={o['requests']} scheduled={d['scheduled_requests']:.0f} delivered={d['delivered_share']:.3f} "
      f"raw_p50={r['p50_ms']:.3f} corrected_p50={c['p50_ms']:.3f} (+{(c['p50_ms']-r['p50_ms'])*1000:.0f} µs) "
      f"raw_p99={r['p99_ms']:.3f} corrected_p99={c['p99_ms']:.3f} "
      f"lateness_p50={l['p50_ms']:.3f} lateness_p99={l['p99_ms']:.3f} (ms)")
PY
}

start_ref healthy
run healthy "$URL"
start_ref stall --defect stall
run stall "$URL"
