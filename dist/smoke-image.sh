#!/bin/sh
# dist/smoke-image.sh: builds the Dockerfile's runtime stage with podman and
# runs the image: `--version`, `validate` of the shipped suites, a short
# `run` against the embedded reference (read-only root, /tmp a tmpfs, as the
# Kubernetes manifests run it), and `serve` answering /healthz.
#
#   dist/smoke-image.sh [--binary FILE]     (default: target/debug/tminus)
#
# Base images cannot be pulled on the project's machines, so the runtime's
# base is a Debian root filesystem made locally by mmdebstrap from Debian's
# apt repository (cached in target/smoke/), given to the Dockerfile as
# RUNTIME_BASE; the binary comes through the `prebuilt` stage, not the
# Rust builder (whose image cannot be pulled either).
#
# Exit: 0 passed; 1 a check failed; 2 usage; 77 podman cannot run
# containers on this machine (the reason is printed; never silent).
set -eu

say() { echo "smoke-image: $*" >&2; }
root=$(cd "$(dirname "$0")/.." && pwd)
binary="$root/target/debug/tminus"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) [ $# -ge 2 ] || { say "--binary needs a value"; exit 2; }; binary=$2; shift 2 ;;
    *) say "unknown argument: $1"; exit 2 ;;
  esac
done
[ -x "$binary" ] || { say "no binary at $binary (cargo build --locked first)"; exit 2; }
for tool in podman mmdebstrap curl; do
  command -v "$tool" >/dev/null 2>&1 || { say "$tool is not installed: podman cannot be tried here"; exit 77; }
done

version=$("$binary" --version | sed 's/^tminus //')
cache="$root/target/smoke"
mkdir -p "$cache"
base=localhost/tminus-smoke-base:bookworm
image=localhost/tminus-smoke:$version

# podman's defaults ask for more open files and processes than an
# unprivileged-looking root (no CAP_SYS_RESOURCE) may set: stay within the
# hard limits. runc where installed: crun refuses a cgroup v1/v2 hybrid.
flags="--ulimit nofile=1024:$(ulimit -Hn) --ulimit nproc=4096:4096"
runtime=""
if command -v runc >/dev/null 2>&1; then runtime="--runtime runc"; fi

if [ ! -s "$cache/bookworm.tar" ]; then
  say "making the Debian bookworm root filesystem (mmdebstrap, minbase + ca-certificates)"
  # Debian's mirror is the one thing fetched: when it cannot be reached
  # the image cannot be tried here, which is not the image's fault.
  if ! mmdebstrap --variant=minbase --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --format=tar bookworm "$cache/bookworm.tar.tmp" http://deb.debian.org/debian >&2; then
    rm -f "$cache/bookworm.tar.tmp"
    say "mmdebstrap could not make the Debian root filesystem (is http://deb.debian.org reachable?): the image cannot be tried here"
    exit 77
  fi
  mv "$cache/bookworm.tar.tmp" "$cache/bookworm.tar"
fi
podman import "$cache/bookworm.tar" "$base" >/dev/null

# Can podman run a container here at all?
# shellcheck disable=SC2086
if ! why=$(podman $runtime run --rm --network none $flags "$base" /bin/true 2>&1); then
  say "podman cannot run containers on this machine: $why"
  exit 77
fi

ctx=$(mktemp -d "${TMPDIR:-/tmp}/tminus-smoke.XXXXXX")
cid=""
cleanup() {
  if [ -n "$cid" ]; then podman rm -f "$cid" >/dev/null 2>&1 || true; fi
  rm -rf "$ctx"
}
trap cleanup EXIT
cp "$binary" "$ctx/tminus"
cp -r "$root/suites" "$ctx/suites"
# shellcheck disable=SC2086
podman build $runtime $flags --network none --target prebuilt \
  --build-arg RUNTIME_BASE="$base" --build-arg VERSION="$version" \
  -f "$root/Dockerfile" -t "$image" "$ctx" >&2

fail() { say "FAILED: $*"; exit 1; }
# shellcheck disable=SC2086
run() { podman $runtime run --rm --read-only --tmpfs /tmp $flags "$@"; }

user=$(podman image inspect --format '{{.Config.User}} {{.Config.WorkingDir}} {{json .Config.Entrypoint}}' "$image")
[ "$user" = '65532:65532 /work ["tminus"]' ] || fail "image config is \`$user\`"
said=$(run --network none "$image" --version) || fail "--version"
[ "$said" = "tminus $version" ] || fail "--version said \`$said\`"
run --network none "$image" validate /usr/share/tminus/suites >&2 || fail "validate /usr/share/tminus/suites"
run --network none "$image" run /usr/share/tminus/suites/trace.yaml --report-dir /tmp/reports >&2 ||
  fail "run trace.yaml against the embedded reference"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# shellcheck disable=SC2086
cid=$(podman $runtime run -d --read-only --tmpfs /tmp $flags --network host \
  -e TMINUS_SERVE_TOKEN=smoke-token-0123456789abcdef "$image" \
  serve --suites /usr/share/tminus/suites --listen "127.0.0.1:$port" --reports /tmp/reports)
ok=""
i=0
while [ $i -lt 40 ]; do
  if [ "$(curl -fsS --max-time 2 "http://127.0.0.1:$port/healthz" 2>/dev/null)" = "ok" ]; then ok=1; break; fi
  sleep 0.5
  i=$((i + 1))
done
[ -n "$ok" ] || fail "serve did not answer /healthz on 127.0.0.1:$port within 20 s: $(podman logs "$cid" 2>&1 | tail -5)"
podman rmi "$image" >/dev/null 2>&1 || true
say "passed: $image ($version) --version, validate, run trace.yaml, serve /healthz"
