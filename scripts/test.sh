#!/usr/bin/env bash
# make test's body. bin/locktorture is built first (it lists the packages
# of every kind); then three things run side by side: `make deps`
# (scripts/deps.sh: the servers' packages, when missing), the container
# images (scripts/images.sh, WITH_BARE=1) and vet. The tests start when
# deps and vet are done; a test that needs an image waits for that build
# (internal/testenv: LOCKTORTURE_IMAGES_STATUS holds nothing while it runs,
# then its exit status). Without a Docker engine no image is built and the
# container tests skip, saying so. The build is stopped if this script
# ends first. deps and images take turns with apt on this machine
# (scripts/apt-lock.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

t0=$(date +%s)
# say prints a line with the seconds since make test began.
say() { echo "test: [$(($(date +%s) - t0))s] $*"; }

"$GO" build -o bin/locktorture ./cmd/locktorture
export LOCKTORTURE=bin/locktorture

status=""
build=""
deps=""
depslog=$(mktemp "${TMPDIR:-/tmp}/locktorture-deps.XXXXXX")
stop_build() {
	# deps is waited for, never stopped: dpkg cut off half-way leaves the
	# machine's packages half-installed.
	if [ -n "$deps" ]; then
		wait "$deps" 2>/dev/null || true
	fi
	rm -f "$depslog"
	if [ -n "$build" ] && kill -0 "$build" 2>/dev/null; then
		echo "test: stopping the image build" >&2
		kill -TERM -- "-$build" 2>/dev/null || kill -TERM "$build" 2>/dev/null || true
		wait "$build" 2>/dev/null || true
	fi
	if [ -n "$status" ]; then rm -f "$status" "$status.log"; fi
}
trap stop_build EXIT
trap 'exit 130' INT TERM

if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
	status=$(mktemp "${TMPDIR:-/tmp}/locktorture-images.XXXXXX")
	# set -m: the build gets a process group of its own, so stop_build
	# stops debootstrap and apt inside it too.
	set -m
	(
		rc=0
		WITH_BARE=1 LOCKTORTURE=bin/locktorture bash scripts/images.sh >"$status.log" 2>&1 || rc=$?
		echo "$rc" >"$status"
		if [ "$rc" = 0 ]; then
			grep '^images:' "$status.log" >&2 || true
		else
			echo "images: build failed (exit $rc): the container tests fail under CI, skip elsewhere" >&2
			tail -n 20 "$status.log" >&2
		fi
	) &
	build=$!
	set +m
	export LOCKTORTURE_IMAGES_STATUS="$status"
	echo "test: building the container images beside vet and the tests (log: $status.log)"
else
	echo "images: no Docker engine answers: the container tests (--servers docker) will skip"
fi

# The servers' packages, beside vet (which needs none of them): its log is
# shown when it ends; the tests wait for it.
(DEPS="${DEPS:-}" bash scripts/deps.sh) >"$depslog" 2>&1 &
deps=$!
say "installing what is missing of the servers' packages beside vet (make deps)"
${MAKE:-make} --no-print-directory vet GO="$GO"
say "vet done"
rc=0
wait "$deps" || rc=$?
deps=""
cat "$depslog"
if [ "$rc" != 0 ]; then
	echo "test: make deps failed (exit $rc)" >&2
	exit "$rc"
fi
say "deps done; go test"
# go test runs the packages it is given in about that order, three at a
# time (LOCKTORTURE_TEST_P; go's default is one per core, two here): the
# packages mostly wait on servers, faults and timers rather than on the
# cores, and each run has servers, ports and stores of its own. The longest
# go first (runner with its container tests, the CLI's, the nightly job's
# test, which waits for the bare image, shrink's...), so that the short
# ones fill in beside them at the end rather than a long one starting last.
# A package not in this list keeps its place after them; a name here that
# is no package any more is passed over. examples/locktest (a module of its
# own) is tested beside them, its output shown when both are done.
long="runner cmd/locktorture internal/nightly shrink locktest cluster clientprotocol backends"
mod=$("$GO" list -m)
mapfile -t all < <("$GO" list ./...)
pkgs=()
for p in $long; do
	case " ${all[*]} " in *" $mod/$p "*) pkgs+=("$mod/$p") ;; esac
done
for p in "${all[@]}"; do
	case " ${pkgs[*]} " in *" $p "*) ;; *) pkgs+=("$p") ;; esac
done
exlog=$(mktemp "${TMPDIR:-/tmp}/locktorture-examples.XXXXXX")
(cd examples/locktest && "$GO" vet ./... && "$GO" test -count=1 -timeout 10m ./...) >"$exlog" 2>&1 &
ex=$!
rc=0
"$GO" test -count=1 -p "${LOCKTORTURE_TEST_P:-3}" -timeout 45m "${pkgs[@]}" || rc=$?
say "go test done (exit $rc)"
exrc=0
wait "$ex" || exrc=$?
echo "examples/locktest:"
cat "$exlog"
rm -f "$exlog"
say "examples/locktest done (exit $exrc)"
[ "$rc" = 0 ] || exit "$rc"
[ "$exrc" = 0 ] || exit "$exrc"
if [ -n "$build" ]; then
	wait "$build" || true
	build=""
fi
