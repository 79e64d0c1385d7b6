#!/usr/bin/env bash
# soak.sh BIN STORE DURATION: the soak behind `make soak` — a full-speed
# baseline (redis-token, 8 clients on 8 keys, hold 1µs, think 1–2µs) and
# the chaos mix (every fault that applies, at random), DURATION each, with
# the harness's resident memory sampled every 5s (scripts/rss.sh); prints
# each run's summary and peak RSS. Fails when the baseline is not valid or
# either run is a harness error (the chaos mix may well come out invalid:
# that is what it is for).
set -u
bin=$1 store=$2 duration=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$store"
# In the store, so that the repeat command the run prints works.
scenario="$store/soak-baseline.yaml"
cat >"$scenario" <<YAML
name: soak-baseline
description: >
  The soak's baseline: no faults, clients at full speed (work and think
  times of a microsecond or two), so the harness records as many ops as
  it can; memory must stay flat however long it runs.
backend: redis-token
resource: memory
clients: 8
keys: 8
ttl: 2s
hold: 1us
think_min: 1us
think_max: 2us
timeout: 500ms
duration: $duration
seed: 1
checkers: [mutex, linearizable, fencing, lost-update, stats]
expect:
  valid: valid
YAML
status=0
run() {
	local name=$1; shift
	echo "== soak: $name for $duration"
	RSS_EVERY=5 "$here/rss.sh" "$tmp/$name.rss" "$bin" run "$@" --store "$store" --quiet
	local code=$?
	echo "   RSS samples (seconds kB): $(tr '\n' ' ' <"$tmp/$name.rss")"
	return $code
}
run baseline --scenario-file "$scenario"
code=$?
if [ $code -ne 0 ]; then
	echo "soak: the full-speed baseline exited $code (want 0: valid)" >&2
	status=1
fi
run chaos --scenario chaos --duration "$duration"
code=$?
if [ $code -ge 254 ]; then
	echo "soak: the chaos mix exited $code (a harness error)" >&2
	status=1
fi
exit $status
