#!/usr/bin/env bash
# The system tools a make target needs, checked the same way for every target.
#
#   scripts/system-deps.sh run|test|build|stress [STAMP]
#
# Sets (a later set includes the earlier ones' needs only where the Makefile asks for both):
#   run    what `nyz` itself uses: git (git tools), bwrap (the default sandbox), rg (optional)
#   test   what `make test` adds: tmux (console tests), sshd + ssh client (the SSH executor),
#          chromium (the web console's browser tests and the browser tools' tests)
#   build  what building the offline model needs on first install: a C and C++ compiler
#   stress what `make test-stress` adds: stress-ng, the load generator that keeps the cores busy
#
# Why one script: `make run` must not demand what only the tests use (a user without root who
# lacks tmux could not start nyz at all), and both targets must agree on names and messages.
#
# As root with apt-get, missing packages are installed (CI runs `make test` as root on a fresh
# machine). Otherwise the exact package names for apt, dnf, pacman and brew are printed and the
# caller goes on with whatever does not need them. STAMP is touched once everything required
# is there, so the check (and the rg notice) is said once; while something is missing it is
# said again on every run. Exit status: 0, or 1 when `make test`'s apt-get install as root failed.
#
# Environment: SBIN_DIRS (default "/usr/sbin /sbin /usr/local/sbin") are searched besides
# PATH, because sshd lives there and is often not on a user's PATH.
set -uo pipefail

# cmd | required (yes/no) | apt | dnf | pacman | brew (- none) | what goes without it
TOOLS='
git|yes|git|git|git|git|the git tools (status, diff, log, commit) fail
bwrap|yes|bubblewrap|bubblewrap|bubblewrap|-|bash commands are refused under the default sandbox (set [agent.sandbox] fallback = "unsandboxed" to run them unconfined, or level = "full-access")
rg|no|ripgrep|ripgrep|ripgrep|ripgrep|the grep tool uses its Python walker instead (slower on big trees)
tmux|yes|tmux|tmux|tmux|tmux|the console tests are skipped
sshd|yes|openssh-server|openssh-server|openssh|-|the SSH executor tests are skipped
ssh|yes|openssh-client|openssh-clients|openssh|openssh|the SSH executor tests are skipped
cc|yes|build-essential|gcc|base-devel|-|llama.cpp cannot be built, so the offline model is not installed (macOS: xcode-select --install)
c++|yes|build-essential|gcc-c++|base-devel|-|llama.cpp cannot be built, so the offline model is not installed (macOS: xcode-select --install)
chromium|no|chromium|chromium|chromium|--cask chromium|the browser tests are skipped
stress-ng|yes|stress-ng|stress-ng|stress-ng|stress-ng|make test-stress cannot load the machine, so it does not run
'
# chromium is optional for `make test` (the browser tests of the web console and the browser
# tools skip without it outside CI); CI runs as root, so it is installed there.

set=${1:-}
case "$set" in
  run) wanted="git bwrap rg"; label="make run" ;;
  test) wanted="tmux sshd ssh chromium"; label="make test" ;;
  build) wanted="cc c++"; label="building llama.cpp (the offline model)" ;;
  stress) wanted="stress-ng"; label="make test-stress" ;;
  *) echo "usage: $0 run|test|build|stress [STAMP]" >&2; exit 2 ;;
esac
stamp="${2:-}"
sbin_dirs="${SBIN_DIRS-/usr/sbin /sbin /usr/local/sbin}"

have() {
  command -v "$1" >/dev/null 2>&1 && return 0
  local dir
  for dir in $sbin_dirs; do [ -x "$dir/$1" ] && return 0; done
  return 1
}

declare -A ROW=()
while IFS= read -r line; do
  [ -n "$line" ] && ROW["${line%%|*}"]=$line
done <<<"$TOOLS"

field() {  # field CMD N: column N (1-based) of CMD's row in TOOLS
  local -a cols
  IFS='|' read -r -a cols <<<"${ROW[$1]}"
  printf '%s' "${cols[$(($2 - 1))]}"
}

missing_required=""
missing_optional=""
for cmd in $wanted; do
  have "$cmd" && continue
  if [ "$(field "$cmd" 2)" = yes ]; then missing_required+=" $cmd"; else missing_optional+=" $cmd"; fi
done
missing="${missing_required}${missing_optional}"

if [ -z "$missing" ]; then
  [ -n "$stamp" ] && touch "$stamp"
  exit 0
fi

packages() {  # packages COLUMN CMD...: one package manager's names, each once
  local col=$1 cmd pkg out=""
  local -A seen=()
  shift
  for cmd in "$@"; do
    pkg=$(field "$cmd" "$col")
    [ "$pkg" = - ] || [ -n "${seen[$pkg]:-}" ] && continue
    seen[$pkg]=1
    out+="${out:+ }$pkg"
  done
  printf '%s' "$out"
}

status=0
if [ "$EUID" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  # shellcheck disable=SC2086
  pkgs=$(packages 3 $missing)
  echo "$label: installing system packages: $pkgs"
  # shellcheck disable=SC2086
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null; then
    [ -n "$stamp" ] && touch "$stamp"
    exit 0
  fi
  echo "$label: apt-get could not install: $pkgs (see its error above)" >&2
  # CI runs `make test` as root: a failed install there must fail, not skip tests quietly.
  [ "$set" = test ] || [ "$set" = stress ] && status=1
fi

sudo=""
[ "$EUID" = 0 ] || sudo="sudo "
# shellcheck disable=SC2086
{
  if [ -n "$missing_required" ]; then
    echo "$label: missing system tools:$missing_required"
  else
    echo "$label: optional system tool not found:$missing_optional"
  fi
  for cmd in $missing; do
    echo "  without $cmd: $(field "$cmd" 7)"
  done
  echo "  install with one of:"
  echo "    Debian/Ubuntu:  ${sudo}apt-get install $(packages 3 $missing)"
  echo "    Fedora/RHEL:    ${sudo}dnf install $(packages 4 $missing)"
  echo "    Arch:           ${sudo}pacman -S $(packages 5 $missing)"
  brew=$(packages 6 $missing)
  [ -n "$brew" ] && echo "    macOS (brew):   brew install $brew"
  [ "$status" = 0 ] && echo "  going on without them."
} >&2
# Only an optional tool was missing: a notice, said once (the stamp ends the checks).
if [ "$status" = 0 ] && [ -z "$missing_required" ] && [ -n "$stamp" ]; then touch "$stamp"; fi
exit "$status"
