#!/usr/bin/env bash
# rss.sh LOG COMMAND...: runs COMMAND, samples its resident memory (VmRSS of
# /proc/PID/status) every RSS_EVERY seconds (default 5) into LOG, one line
# "seconds kB" each, and prints the peak when it ends: the kernel's own
# high-water mark (VmHWM) as last read, which sees peaks between samples
# (but not those of the last RSS_EVERY seconds). Exits with COMMAND's status.
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
	read -r kb hwm < <(awk '/^VmRSS:/ {r=$2} /^VmHWM:/ {h=$2} END {print r, h}' /proc/$pid/status 2>/dev/null)
	if [ -n "${kb:-}" ]; then
		echo "$(( $(date +%s) - start )) $kb" >>"$log"
		[ "$kb" -gt "$peak" ] && peak=$kb
		[ -n "${hwm:-}" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
	fi
	sleep "$every"
done
wait "$pid"
code=$?
echo "peak RSS: $(( peak / 1024 )) MB ($(wc -l <"$log") samples every ${every}s in $log) — $*"
exit $code
