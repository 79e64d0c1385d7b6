#!/usr/bin/env bash
# make test's body, after `make deps`: the container images are built in
# the background (scripts/images.sh, WITH_BARE=1) while vet and the tests
# run; a test that needs an image waits for that build (internal/testenv:
# LOCKTORTURE_IMAGES_STATUS holds nothing while it runs, then its exit
# status). Without a Docker engine no image is built and the container
# tests skip, saying so. The build is stopped if this script ends first.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

status=""
build=""
stop_build() {
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
		WITH_BARE=1 bash scripts/images.sh >"$status.log" 2>&1 || rc=$?
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

${MAKE:-make} --no-print-directory vet GO="$GO"
# go test runs the packages it is given in about that order, two at a
# time: the longest first (runner with its container tests, the CLI's, the
# nightly job's test, which waits for the bare image, shrink's...), so that
# the short ones fill in beside them at the end rather than a long one
# starting last. A package not in this list keeps its place after them; a
# name here that is no package any more is passed over.
long="runner cmd/locktorture internal/nightly shrink locktest cluster clientproc backends"
mod=$("$GO" list -m)
mapfile -t all < <("$GO" list ./...)
pkgs=()
for p in $long; do
	case " ${all[*]} " in *" $mod/$p "*) pkgs+=("$mod/$p") ;; esac
done
for p in "${all[@]}"; do
	case " ${pkgs[*]} " in *" $p "*) ;; *) pkgs+=("$p") ;; esac
done
"$GO" test -count=1 -timeout 45m "${pkgs[@]}"
(cd examples/locktest && "$GO" vet ./... && "$GO" test -count=1 -timeout 10m ./...)
if [ -n "$build" ]; then
	wait "$build" || true
	build=""
fi
