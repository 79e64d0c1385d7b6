#!/usr/bin/env bash
# Builds locktorture-servers:<suite> for each Debian suite in SUITES (default
# bookworm): one local image per suite holding every server the harness
# starts, from that suite's own packages, with no container registry:
# debootstrap a minbase root, install the servers in a chroot (a
# policy-rc.d that exits 101 keeps package scripts from starting servers on
# the host), then `tar | docker import`. Nothing is started in the image:
# the harness starts each server with its own command line, as in local
# mode.
#
# Which packages: every server kind's, from the kind registry
# (`locktorture list packages`): each "required" one must be in the suite,
# an "optional" one (valkey-server before trixie) is skipped, and said so,
# where the suite lacks it.
#
#   scripts/images.sh                               bookworm, when missing
#   SUITES="bullseye bookworm trixie" scripts/images.sh
#   FORCE=1 scripts/images.sh                       rebuild (the tag moves to
#                                                   the new image; containers
#                                                   of the old one keep it)
#   REPO=name MIRROR=url                            another repository / mirror
#   IMAGE=ref                                       the tag, with one suite
#   LOCKTORTURE=bin/locktorture                     the binary that lists the
#                                                   packages (else go run)
#   BARE=1                                          locktorture-bare:<suite>
#                                                   alone: the minbase root, no
#                                                   server, as a CI job's
#                                                   debian:<suite> container
#                                                   starts (the nightly job's
#                                                   test runs its steps in it)
#   WITH_BARE=1                                     both, from one debootstrap
set -euo pipefail
cd "$(dirname "$0")/.."

SUITES="${SUITES:-bookworm}"
REPO="${REPO:-locktorture-servers}"
BARE_REPO="${BARE_REPO:-locktorture-bare}"
BARE="${BARE:-}"
WITH_BARE="${WITH_BARE:-}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"

say() { echo "images: $*"; }
die() { echo "images: $*" >&2; exit 1; }

nsuites=$(wc -w <<<"$SUITES")
[ -z "${IMAGE:-}" ] || [ "$nsuites" -eq 1 ] || die "IMAGE names one tag; with SUITES=\"$SUITES\" use REPO"

docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  die "no Docker engine answers (docker version); start one and retry"

# missing TAG: whether TAG is to be built.
missing() {
  if [ -z "${FORCE:-}" ] && docker image inspect "$1" >/dev/null 2>&1; then
    say "$1 is there (FORCE=1 rebuilds it)"
    return 1
  fi
}
todo=()
for suite in $SUITES; do
  servers=- bare=-
  if [ -z "$BARE" ] && missing "${IMAGE:-$REPO:$suite}"; then servers="${IMAGE:-$REPO:$suite}"; fi
  if { [ -n "$BARE" ] || [ -n "$WITH_BARE" ]; } && missing "$BARE_REPO:$suite"; then bare="$BARE_REPO:$suite"; fi
  [ "$servers$bare" = "--" ] || todo+=("$suite $servers $bare")
done
[ ${#todo[@]} -gt 0 ] || exit 0
[ "$(id -u)" -eq 0 ] || die "debootstrap and chroot need root: sudo $0"

# The packages, from the kind registry.
if [ -n "${LOCKTORTURE:-}" ]; then
  list=$("$LOCKTORTURE" list packages) || die "$LOCKTORTURE list packages failed"
else
  list=$(go run ./cmd/locktorture list packages) || die "go run ./cmd/locktorture list packages failed"
fi
REQUIRED=$(awk 'NR > 1 && $3 == "required" {print $1}' <<<"$list" | sort -u | tr '\n' ' ')
OPTIONAL=$(awk 'NR > 1 && $3 == "optional" {print $1}' <<<"$list" | sort -u | tr '\n' ' ')
[ -n "$REQUIRED" ] || die "the kind registry lists no packages"

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck source=scripts/apt.sh
  . scripts/apt.sh
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

tmpbase="${TMPDIR:-/var/tmp}"
root=""
cleanup() {
  [ -n "$root" ] || return 0
  mountpoint -q "$root/proc" && umount -l "$root/proc" || true
  rm -rf --one-file-system "$root"
  rm -f "$root.log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# in_root runs a shell command in the chroot, its output kept in a log that
# is shown (its tail) only when it fails.
in_root() {
  chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c "$1" >"$root.log" 2>&1 ||
    { tail -30 "$root.log" >&2; rm -f "$root.log"; die "$2"; }
}

# build SUITE TAG BARETAG: the servers' image TAG and the bare image BARETAG
# (either "-": not built) from one debootstrap.
build() {
  local suite=$1 tag=$2 baretag=$3 start free_kb want skipped pgbin versions size
  # About 0.6 GB for the root, as much again for docker's copy.
  free_kb=$(df -Pk "$tmpbase" | awk 'NR==2 {print $4}')
  [ "$free_kb" -ge 2000000 ] || die "need 2 GB free under $tmpbase, have $((free_kb / 1024)) MB"
  root=$(mktemp -d "$tmpbase/locktorture-images.XXXXXX")
  start=$(date +%s)
  say "$suite: debootstrap --variant=minbase $suite into $root (from $MIRROR)"
  debootstrap --variant=minbase "$suite" "$root" "$MIRROR" >"$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; rm -f "$root.log"; die "$suite: debootstrap failed"; }
  rm -f "$root.log"
  # Package scripts must not start servers (as in debian:<suite>).
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"

  if [ "$baretag" != - ]; then
    # As debian:<suite> comes: nothing installed beyond minbase, no package
    # lists, a policy-rc.d that keeps services from starting.
    say "$suite: docker import -> $baretag (bare)"
    # Without the packages debootstrap downloaded (debian:<suite> has none).
    tar -C "$root" --numeric-owner --exclude='./var/cache/apt/archives/*.deb' -c . | docker import \
      --change "LABEL org.locktorture.suite=$suite" \
      --change 'CMD ["/bin/bash"]' \
      --message "Debian $suite minbase, as debian:$suite" \
      - "$baretag" >/dev/null
    say "built $baretag in $(($(date +%s) - start))s"
    if [ "$tag" = - ]; then
      cleanup
      root=""
      return 0
    fi
  fi

  # Package scripts must not start servers (they would listen on the host's
  # ports from inside the chroot), and postgresql must not create a cluster.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  mkdir -p "$root/etc/postgresql-common/createcluster.d"
  echo 'create_main_cluster = false' >"$root/etc/postgresql-common/createcluster.d/locktorture.conf"
  # No docs or man pages: a smaller image.
  cat >"$root/etc/dpkg/dpkg.cfg.d/01-nodoc" <<'EOF'
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
  echo "deb $MIRROR $suite main" >"$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc"

  in_root "apt-get update -qq" "$suite: apt-get update in the chroot failed"
  want="$REQUIRED" skipped=""
  for p in $OPTIONAL; do
    if chroot "$root" apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
      want="$want $p"
    else
      skipped="$skipped $p"
    fi
  done
  [ -z "$skipped" ] || say "$suite: has no$skipped (skipped)"
  say "$suite: installing $want"
  in_root "apt-get install -y -qq --no-install-recommends $want && apt-get clean" \
    "$suite: apt-get install in the chroot failed"
  # What was installed, for the image's message: "redis-server=5:7.0.15-1~deb12u1 ...".
  # shellcheck disable=SC2086
  versions=$(chroot "$root" dpkg-query -W -f='${Package}=${Version} ' $want)
  rm -f "$root.log"
  umount -l "$root/proc"

  # Debian keeps PostgreSQL's programs off PATH, under its major version.
  pgbin=$(cd "$root" && ls -d usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$pgbin" ] || die "$suite: no usr/lib/postgresql/*/bin in the image"

  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/log/*.log \
    "$root/usr/sbin/policy-rc.d" "$root/etc/resolv.conf"
  : >"$root/etc/resolv.conf"

  say "$suite: docker import -> $tag"
  tar -C "$root" --numeric-owner -c . | docker import \
    --change "ENV PATH=/$pgbin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "LABEL org.locktorture.suite=$suite" \
    --change 'CMD ["/bin/bash"]' \
    --message "locktorture servers from Debian $suite: ${versions% }" \
    - "$tag" >/dev/null
  cleanup
  root=""
  size=$(docker image inspect --format '{{.Size}}' "$tag")
  say "built $tag ($((size / 1024 / 1024)) MB) in $(($(date +%s) - start))s"
}

for t in "${todo[@]}"; do
  # shellcheck disable=SC2086
  build $t
done
