#!/usr/bin/env bash
# rss.sh LOG COMMAND...: runs COMMAND, samples its resident memory (VmRSS of
# /proc/PID/status) every RSS_EVERY seconds (default 5) into LOG, one line
# "seconds kB" each, and prints the peak when it ends. Exits with COMMAND's
# status.
set -u
log=$1; shift
every=${RSS_EVERY:-5}
"$@" &
pid=$!
trap 'kill -INT $pid 2>/dev/null; wait $pid' INT TERM
: >"$log"
start=$(date +%s)
peak=0
while kill -0 "$pid" 2>/dev/null; do
	kb=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status 2>/dev/null)
	if [ -n "$kb" ]; then
		echo "$(( $(date +%s) - start )) $kb" >>"$log"
		[ "$kb" -gt "$peak" ] && peak=$kb
	fi
	sleep "$every"
done
wait "$pid"
code=$?
# The kernel's own high-water mark is gone with the process: the samples' peak it is.
echo "peak RSS: $(( peak / 1024 )) MB ($(wc -l <"$log") samples every ${every}s in $log) — $*"
exit $code
