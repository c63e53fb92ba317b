#!/usr/bin/env bash
# Generator overhead benchmark (issue 8): tminus's load, a bare goose binary,
# wrk and oha (when installed) against the same release-built reference on
# 127.0.0.1, same users/connections and duration, interleaved over ROUNDS.
# Prints req/s and generator CPU per request, each as a ratio to bare goose.
#
#   bench/run.sh [SECONDS=10] [USERS=8] [ROUNDS=1]
#
# Then the same over https (`tminus reference --tls`, rustls; HTTPS=0 skips
# it): tminus (trusting the reference's CA with --cacert), wrk and oha, as
# ratios to wrk (bare goose has no CA option).
#
# Not a timed test: run it by hand on a quiet machine. Loopback only.
set -euo pipefail
SECS=${1:-10}; USERS=${2:-8}; ROUNDS=${3:-1}
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tminus --example bare-goose
TM=target/release/tminus
BARE=target/release/examples/bare-goose
WORK=$(mktemp -d)
TLS_PID=
trap 'kill $REF_PID $TLS_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT

"$TM" reference --port 0 > "$WORK/url" 2> "$WORK/ref.err" &
REF_PID=$!
for _ in $(seq 50); do [ -s "$WORK/url" ] && break; sleep 0.1; done
URL=$(head -1 "$WORK/url")
case "$URL" in http://127.0.0.1:*) ;; *) echo "reference did not start" >&2; exit 3;; esac
PATH_="/public/v1/messages/count"

cat > "$WORK/bench.yaml" <<YAML
suite: bench
target: { headers: { Authorization: "Bearer ref_load_key" } }
load:
  id: bench
  stages: [{ users: $USERS, over: 0s }, { users: $USERS, over: ${SECS}s }]
  max_users: $USERS      # a closed pool: the same users as the other tools (no growth)
  max_rate: 10000000/s   # no pacing: closed loop at full speed, like the others
  requests:
    - name: count
      request: { path: $PATH_ }
YAML

# The same burst with the reference's contract: its sample is judged.
{ echo "contract: { openapi: $PWD/suites/reference.openapi.json }"; cat "$WORK/bench.yaml"; } > "$WORK/bench-contract.yaml"

# cpu_of OUT ERR CMD... : runs CMD (stdout to OUT, stderr to ERR) and sets
# CPU_S to its user+sys seconds. time(1) prepends a line on a non-zero exit.
cpu_of() {
  local out=$1 err=$2; shift 2
  /usr/bin/time -f "%U %S" -o "$WORK/time" "$@" > "$out" 2> "$err" || true
  CPU_S=$(tail -1 "$WORK/time" | awk '{print $1+$2}')
}

declare -A REQS CPU
add() { REQS[$1]=$(echo "${REQS[$1]:-0} + $2" | bc -l); CPU[$1]=$(echo "${CPU[$1]:-0} + $3" | bc -l); }

for r in $(seq "$ROUNDS"); do
  # bare goose
  cpu_of /dev/null "$WORK/bare.err" "$BARE" "$URL" "$USERS" "$SECS"
  n=$(grep -o 'requests=[0-9]*' "$WORK/bare.err" | cut -d= -f2); add bare-goose "$n" "$CPU_S"
  # tminus
  rm -rf "$WORK/rep"
  cpu_of /dev/null /dev/null "$TM" run "$WORK/bench.yaml" --target "$URL" --report-dir "$WORK/rep"
  n=$(python3 -c "import json;print(json.load(open('$WORK/rep/load-bench-bench.json'))['overall']['requests'])"); add tminus "$n" "$CPU_S"
  # tminus with the contract sample
  rm -rf "$WORK/rep"
  cpu_of /dev/null /dev/null "$TM" run "$WORK/bench-contract.yaml" --target "$URL" --report-dir "$WORK/rep"
  n=$(python3 -c "import json;print(json.load(open('$WORK/rep/load-bench-bench.json'))['overall']['requests'])"); add tminus+contract "$n" "$CPU_S"
  # wrk
  if command -v wrk >/dev/null; then
    cpu_of "$WORK/wrk.out" /dev/null wrk -t2 -c"$USERS" -d"${SECS}s" -H "Authorization: Bearer ref_load_key" "$URL$PATH_"
    n=$(awk '/requests in/ {print $1}' "$WORK/wrk.out"); add wrk "$n" "$CPU_S"
  fi
  # oha
  if command -v oha >/dev/null; then
    cpu_of "$WORK/oha.json" /dev/null oha --no-tui -c "$USERS" -z "${SECS}s" -H "Authorization: Bearer ref_load_key" --output-format json "$URL$PATH_"
    n=$(python3 -c "import json;d=json.load(open('$WORK/oha.json'));print(sum(d['statusCodeDistribution'].values()))"); add oha "$n" "$CPU_S"
  fi
done

T=$(echo "$SECS * $ROUNDS" | bc -l)
printf "%-12s %10s %14s %12s %16s\n" tool "req/s" "x bare goose" "CPU µs/req" "x bare goose"
base_rps=$(echo "${REQS[bare-goose]} / $T" | bc -l)
base_cpu=$(echo "${CPU[bare-goose]} * 1000000 / ${REQS[bare-goose]}" | bc -l)
for t in bare-goose tminus tminus+contract wrk oha; do
  [ -n "${REQS[$t]:-}" ] || { printf "%-12s %s\n" "$t" "not installed"; continue; }
  rps=$(echo "${REQS[$t]} / $T" | bc -l)
  cpu=$(echo "${CPU[$t]} * 1000000 / ${REQS[$t]}" | bc -l)
  printf "%-12s %10.0f %14.2f %12.1f %16.2f\n" "$t" "$rps" "$(echo "$rps / $base_rps" | bc -l)" "$cpu" "$(echo "$cpu / $base_cpu" | bc -l)"
done

# The same over https: rustls on tminus's side and the reference's.
[ "${HTTPS:-1}" = 1 ] || exit 0
mkdir -p "$WORK/pki"
"$TM" reference --port 0 --tls "$WORK/pki" > "$WORK/tls-url" 2> "$WORK/tls.err" &
TLS_PID=$!
for _ in $(seq 50); do [ -s "$WORK/tls-url" ] && break; sleep 0.1; done
TURL=$(head -1 "$WORK/tls-url")
case "$TURL" in https://127.0.0.1:*) ;; *) echo "the https reference did not start" >&2; exit 3;; esac
declare -A TREQS TCPU
tadd() { TREQS[$1]=$(echo "${TREQS[$1]:-0} + $2" | bc -l); TCPU[$1]=$(echo "${TCPU[$1]:-0} + $3" | bc -l); }
for r in $(seq "$ROUNDS"); do
  rm -rf "$WORK/rep"
  cpu_of /dev/null /dev/null "$TM" run "$WORK/bench.yaml" --target "$TURL" --cacert "$WORK/pki/ca.pem" --report-dir "$WORK/rep"
  n=$(python3 -c "import json;print(json.load(open('$WORK/rep/load-bench-bench.json'))['overall']['requests'])"); tadd tminus "$n" "$CPU_S"
  if command -v wrk >/dev/null; then
    cpu_of "$WORK/wrk.out" /dev/null wrk -t2 -c"$USERS" -d"${SECS}s" -H "Authorization: Bearer ref_load_key" "$TURL$PATH_"
    n=$(awk '/requests in/ {print $1}' "$WORK/wrk.out"); tadd wrk "$n" "$CPU_S"
  fi
  if command -v oha >/dev/null; then
    cpu_of "$WORK/oha.json" /dev/null oha --no-tui -c "$USERS" -z "${SECS}s" --cacert "$WORK/pki/ca.pem" -H "Authorization: Bearer ref_load_key" --output-format json "$TURL$PATH_"
    n=$(python3 -c "import json;d=json.load(open('$WORK/oha.json'));print(sum(d['statusCodeDistribution'].values()))"); tadd oha "$n" "$CPU_S"
  fi
done
[ -n "${TREQS[wrk]:-}" ] || { echo "https: wrk not installed, no ratios"; exit 0; }
echo
printf "%-12s %10s %14s %12s %16s\n" "https tool" "req/s" "x wrk" "CPU µs/req" "x wrk"
w_rps=$(echo "${TREQS[wrk]} / $T" | bc -l)
w_cpu=$(echo "${TCPU[wrk]} * 1000000 / ${TREQS[wrk]}" | bc -l)
for t in tminus wrk oha; do
  [ -n "${TREQS[$t]:-}" ] || { printf "%-12s %s\n" "$t" "not installed"; continue; }
  rps=$(echo "${TREQS[$t]} / $T" | bc -l)
  cpu=$(echo "${TCPU[$t]} * 1000000 / ${TREQS[$t]}" | bc -l)
  printf "%-12s %10.0f %14.2f %12.1f %16.2f\n" "$t" "$rps" "$(echo "$rps / $w_rps" | bc -l)" "$cpu" "$(echo "$cpu / $w_cpu" | bc -l)"
done
