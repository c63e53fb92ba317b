#!/usr/bin/env bash
# Memory stays flat (issue 8): RSS of `tminus run` with a burst of TOTAL
# seconds, sampled at EARLY seconds and just before the end.
#   bench/rss.sh [TOTAL=300] [EARLY=30] [USERS=8] [RATE=2000]
# Loopback only: the release-built reference on 127.0.0.1.
set -euo pipefail
TOTAL=${1:-300}; EARLY=${2:-30}; USERS=${3:-8}; RATE=${4:-2000}
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tminus
TM=target/release/tminus
WORK=$(mktemp -d)
trap 'kill $REF_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
"$TM" reference --port 0 > "$WORK/url" 2>/dev/null &
REF_PID=$!
for _ in $(seq 50); do [ -s "$WORK/url" ] && break; sleep 0.1; done
URL=$(head -1 "$WORK/url")
cat > "$WORK/rss.yaml" <<YAML
suite: rss
target: { headers: { Authorization: "Bearer ref_load_key" } }
load:
  id: rss
  stages: [{ users: $USERS, over: 0s }, { users: $USERS, over: ${TOTAL}s }]
  max_rate: $RATE/s
  requests:
    - name: count
      request: { path: /public/v1/messages/count }
    - name: list
      request: { path: /public/v1/messages, query: { limit: 5 } }
YAML
"$TM" run "$WORK/rss.yaml" --target "$URL" --report-dir "$WORK/rep" >/dev/null 2>&1 &
PID=$!
rss() { awk '/VmRSS/ {print $2}' /proc/$PID/status; }
sleep "$EARLY"; EARLY_KB=$(rss)
sleep $((TOTAL - EARLY - 2)); LATE_KB=$(rss)
wait $PID || true
REQ=$(python3 -c "import json;print(json.load(open('$WORK/rep/load-rss-rss.json'))['overall']['requests'])")
echo "requests=$REQ rss_at_${EARLY}s=${EARLY_KB}kB rss_at_$((TOTAL-2))s=${LATE_KB}kB growth=$(echo "scale=2; ($LATE_KB - $EARLY_KB) * 100 / $EARLY_KB" | bc)%"
