#!/bin/sh
# dist/install.sh: installs a released tminus from its release archive, the
# way the GitHub action (action.yml) does, after checking the archive
# against the release's SHA256SUMS.
#
#   dist/install.sh --version X.Y.Z --dest DIR [--target TRIPLE]
#                   [--repo OWNER/NAME | --base-url URL]
#
# Downloads BASE/SHA256SUMS and BASE/tminus-X.Y.Z-TARGET.tar.gz (the names
# dist/build.sh writes), where BASE is URL, else $TMINUS_RELEASE_BASE_URL,
# else https://github.com/OWNER/NAME/releases/download/vX.Y.Z. TARGET defaults
# to this machine's (uname). Installs DIR/bin/tminus and
# DIR/share/man/man1/tminus.1 and prints the binary's path on stdout.
#
# Exit codes (the action reads them):
#   0  installed
#   1  refused: the archive's SHA-256 is not the one SHA256SUMS lists, the
#      sums do not list it, or it does not hold tminus X.Y.Z. Nothing is
#      installed; never build instead (something changed the release)
#   2  usage
#   3  not published: no SHA256SUMS or no archive for this target at BASE
#      (HTTP 404), no archive for this OS/CPU, or its binary does not run
#      here (e.g. an older glibc): the caller may build from source
#   4  the download failed (network, HTTP status other than 200 and 404)
set -eu

say() { echo "dist/install.sh: $*" >&2; }
usage() { say "$*"; exit 2; }

version=""
dest=""
target=""
repo=""
base=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] || usage "--version needs a value"; version=${2#v}; shift 2 ;;
    --dest) [ $# -ge 2 ] || usage "--dest needs a value"; dest=$2; shift 2 ;;
    --target) [ $# -ge 2 ] || usage "--target needs a value"; target=$2; shift 2 ;;
    --repo) [ $# -ge 2 ] || usage "--repo needs a value"; repo=$2; shift 2 ;;
    --base-url) [ $# -ge 2 ] || usage "--base-url needs a value"; base=$2; shift 2 ;;
    -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
    *) usage "unknown argument: $1 (see --help)" ;;
  esac
done
[ -n "$version" ] || usage "--version is required (e.g. 0.1.0)"
[ -n "$dest" ] || usage "--dest is required"
case "$version" in
  *[!0-9A-Za-z.+-]*) usage "--version $version: not a version" ;;
esac
# TMINUS_RELEASE_BASE_URL: a mirror of the release folders (an internal
# artifact server, GitHub Enterprise, a test's local server); it ends in the
# folder that holds vX.Y.Z's files, e.g. https://mirror/tminus/v0.1.0.
if [ -z "$base" ] && [ -n "${TMINUS_RELEASE_BASE_URL:-}" ]; then
  base=$TMINUS_RELEASE_BASE_URL
fi
if [ -z "$base" ]; then
  [ -n "$repo" ] || usage "give --repo OWNER/NAME or --base-url URL"
  base="https://github.com/$repo/releases/download/v$version"
fi
base=${base%/}

if [ -z "$target" ]; then
  os=$(uname -s)
  cpu=$(uname -m)
  case "$os/$cpu" in
    Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-gnu ;;
    Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-gnu ;;
    Darwin/x86_64) target=x86_64-apple-darwin ;;
    Darwin/arm64 | Darwin/aarch64) target=aarch64-apple-darwin ;;
    *)
      say "no release archive is built for $os/$cpu: build from source"
      exit 3
      ;;
  esac
fi
name="tminus-$version-$target"

command -v curl >/dev/null 2>&1 || { say "curl is needed to download $base"; exit 4; }

work=$(mktemp -d "${TMPDIR:-/tmp}/tminus-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Fetches $1 into $2; a 404 exits 3 (not published), anything else but 200 exits 4.
fetch() {
  if ! code=$(curl -sSL --retry 3 --connect-timeout 20 --max-time 300 -o "$2" -w '%{http_code}' "$1"); then
    say "cannot download $1 (curl failed${code:+, HTTP $code})"
    exit 4
  fi
  case "$code" in
    200) ;;
    404)
      say "$1 is not published (HTTP 404): build from source"
      exit 3
      ;;
    *)
      say "cannot download $1: HTTP $code"
      exit 4
      ;;
  esac
}

fetch "$base/SHA256SUMS" "$work/SHA256SUMS"
# The line for exactly this archive: `<64 hex>  <name>` (or ` *<name>`).
want=$(awk -v n="$name.tar.gz" '($2 == n || $2 == "*" n) && length($1) == 64 { print tolower($1) }' "$work/SHA256SUMS")
case "$want" in
  "")
    if grep -q "$name.tar.gz" "$work/SHA256SUMS"; then
      say "refused: $base/SHA256SUMS lists $name.tar.gz in a line it cannot read"
      exit 1
    fi
    say "release v$version has no archive for $target ($base/SHA256SUMS does not list $name.tar.gz): build from source"
    exit 3
    ;;
  *[!0-9a-f]* | *"
"*)
    say "refused: $base/SHA256SUMS lists $name.tar.gz more than once or not as hex"
    exit 1
    ;;
esac

fetch "$base/$name.tar.gz" "$work/$name.tar.gz"
if command -v sha256sum >/dev/null 2>&1; then
  got=$(sha256sum "$work/$name.tar.gz" | awk '{ print $1 }')
else
  got=$(shasum -a 256 "$work/$name.tar.gz" | awk '{ print $1 }')
fi
if [ "$got" != "$want" ]; then
  say "refused: $name.tar.gz has SHA-256 $got, but $base/SHA256SUMS lists $want (a changed or corrupted archive: nothing installed)"
  exit 1
fi

mkdir "$work/unpacked"
if ! tar -xzf "$work/$name.tar.gz" -C "$work/unpacked"; then
  say "refused: $name.tar.gz does not unpack"
  exit 1
fi
unpacked="$work/unpacked/$name"
if [ ! -f "$unpacked/tminus" ]; then
  say "refused: $name.tar.gz holds no $name/tminus"
  exit 1
fi
if ! said=$("$unpacked/tminus" --version 2>"$work/stderr"); then
  say "the released binary does not run here ($(head -c 300 "$work/stderr")): build from source"
  exit 3
fi
if [ "$said" != "tminus $version" ]; then
  say "refused: $name.tar.gz holds \`$said\`, not tminus $version"
  exit 1
fi

mkdir -p "$dest/bin" "$dest/share/man/man1"
cp "$unpacked/tminus" "$dest/bin/tminus.tmp"
chmod 0755 "$dest/bin/tminus.tmp"
mv "$dest/bin/tminus.tmp" "$dest/bin/tminus"
if [ -f "$unpacked/man/man1/tminus.1" ]; then
  cp "$unpacked/man/man1/tminus.1" "$dest/share/man/man1/tminus.1"
fi
say "installed tminus $version ($target, SHA-256 $got) from $base"
dir=$(cd "$dest/bin" && pwd)
echo "$dir/tminus"
