#!/usr/bin/env bash
# Run a long, quiet command (the llama.cpp build) and say that it is still working: a line
# with the elapsed time every 15 s, and the total at the end. The command's own output and
# exit status pass through unchanged. On a terminal the elapsed time rewrites one line (a 5-min
# build printed 20 lines of it); in a log each is its own line.
# Usage: scripts/progress.sh LABEL COMMAND [ARGS...]
set -u
label=$1
shift
every=${PROGRESS_EVERY:-15}
start=$(date +%s)

span() {  # seconds -> "2 min 05 s" / "45 s"
  local s=$1
  if [ "$s" -ge 60 ]; then printf '%d min %02d s' $((s / 60)) $((s % 60)); else printf '%d s' "$s"; fi
}

"$@" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exit 130' INT TERM
if [ -t 1 ]; then tty=1; else tty=0; fi
shown=0
next=$((start + every))
while kill -0 "$pid" 2>/dev/null; do
  sleep 1  # a progress clock for a person watching, not synchronisation
  now=$(date +%s)
  if [ "$now" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
    if [ "$tty" -eq 1 ]; then
      printf '\r\033[K      … %s: %s so far' "$label" "$(span $((now - start)))"
      shown=1
    else
      echo "      … $label: $(span $((now - start))) so far"
    fi
    next=$((now + every))
  fi
done
wait "$pid"
status=$?
if [ "$shown" -eq 1 ]; then printf '\r\033[K'; fi
if [ "$status" -eq 0 ]; then
  echo "      $label: done in $(span $(( $(date +%s) - start )))"
fi
exit "$status"
