#!/usr/bin/env bash
# A/A and A/B pairs for `tminus compare` (issue 38): two runs of the shipped
# burst (suites/burst.yaml) against `tminus reference`, compared in both
# orders. Loopback only.
#   bench/compare-aa.sh MODE PAIRS [OUT]
#   MODE: aa   both runs against the same healthy reference
#         hog  the same, with two CPU hogs (busy shells) for 3 s of one run
#              of each pair, from its 2nd second (the second run for odd
#              pairs, the first for even)
#         slow the second run against a reference with --latency 20ms
# Prints one line a pair: exit codes of `compare A B` and `compare B A`,
# and the burst's answers and wall time; a summary at the end.
set -u
MODE=${1:?mode: aa, hog or slow}; PAIRS=${2:-5}; OUT=${3:-$(mktemp -d)}
TM=${TM:-target/debug/tminus}
mkdir -p "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT

start_ref() { # start_ref FILE [ARGS...]: starts a reference (its PID kept), URL in REF_URL
  local f=$1; shift
  "$TM" reference --port 0 "$@" > "$f" 2> "$f.err" &
  PIDS+=($!)
  for _ in $(seq 50); do grep -q '^http://127.0.0.1:' "$f" 2>/dev/null && break; sleep 0.1; done
  REF_URL=$(head -1 "$f")
}
start_ref "$OUT/ref.url"; URL=$REF_URL
SLOW=$URL
if [ "$MODE" = slow ]; then start_ref "$OUT/slow.url" --latency 20ms; SLOW=$REF_URL; fi

hogs() { # hogs: two busy shells from 2 s on, for 3 s; their PIDs in HOGS
  HOGS=()
  for _ in 1 2; do sleep 2 && timeout 3 sh -c 'while :; do :; done' & HOGS+=($!); PIDS+=($!); done
}
unhog() { for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; HOGS=(); }

burst() { # burst DIR URL HOG: sets RC, WALL, ANSWERS
  rm -rf "$1"; mkdir -p "$1"
  [ "$3" = 1 ] && hogs
  local t0; t0=$(date +%s.%N)
  "$TM" run suites/burst.yaml --target "$2" --report-dir "$1" > "$1.out" 2> "$1.err"
  RC=$?
  WALL=$(echo "$(date +%s.%N) - $t0" | bc -l)
  [ "$3" = 1 ] && unhog
  ANSWERS=$(python3 -c "import json;print(json.load(open('$1/load-burst-burst.json'))['overall']['requests'])" 2>/dev/null || echo "?")
}

declare -A COUNT
for i in $(seq "$PAIRS"); do
  h1=0; h2=0
  if [ "$MODE" = hog ]; then if [ $((i % 2)) = 1 ]; then h2=1; else h1=1; fi; fi
  burst "$OUT/a$i" "$URL" $h1; r1=$RC; w1=$WALL; n1=$ANSWERS
  burst "$OUT/b$i" "$SLOW" $h2; r2=$RC; w2=$WALL; n2=$ANSWERS
  "$TM" compare "$OUT/a$i" "$OUT/b$i" > "$OUT/ab$i.out" 2> "$OUT/ab$i.err"; ab=$?
  "$TM" compare "$OUT/b$i" "$OUT/a$i" > "$OUT/ba$i.out" 2> "$OUT/ba$i.err"; ba=$?
  COUNT[ab$ab]=$(( ${COUNT[ab$ab]:-0} + 1 )); COUNT[ba$ba]=$(( ${COUNT[ba$ba]:-0} + 1 ))
  printf 'pair %2d: run exits %s/%s, answers %s/%s, wall %.1fs/%.1fs; compare A B -> %s, B A -> %s: %s\n' \
    "$i" "$r1" "$r2" "$n1" "$n2" "$w1" "$w2" "$ab" "$ba" "$(head -c 160 "$OUT/ab$i.err" | head -1)"
done
echo "summary ($MODE, $PAIRS pairs, exit code: count): A B: $(for k in 0 1 3 4; do printf '%s:%s ' $k "${COUNT[ab$k]:-0}"; done)| B A: $(for k in 0 1 3 4; do printf '%s:%s ' $k "${COUNT[ba$k]:-0}"; done)"
echo "folders in $OUT"
