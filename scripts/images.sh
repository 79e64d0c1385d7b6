#!/usr/bin/env bash
# Builds locktorture-servers:bookworm, one local image holding every server
# the harness starts (redis-server, redis-sentinel, postgres, etcd, zookeeper,
# mariadb),
# from Debian's packages, with no container registry: debootstrap a minbase
# bookworm root, install the servers in a chroot (a policy-rc.d that exits 101
# keeps package scripts from starting servers on the host), then
# `tar | docker import`. Nothing is started in the image: the harness starts
# each server with its own command line, as in local mode.
#
#   scripts/images.sh            build when the image is missing
#   FORCE=1 scripts/images.sh    rebuild
#   IMAGE=ref MIRROR=url         another tag / Debian mirror
set -euo pipefail

IMAGE="${IMAGE:-locktorture-servers:bookworm}"
SUITE=bookworm
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
PACKAGES="${PACKAGES:-redis-server redis-sentinel postgresql etcd-server etcd-client zookeeper default-jre-headless mariadb-server}"
PGBIN=/usr/lib/postgresql/15/bin

say() { echo "images: $*"; }
die() { echo "images: $*" >&2; exit 1; }

docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  die "no Docker engine answers (docker version); start one and retry"
if [ -z "${FORCE:-}" ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  say "$IMAGE is there (FORCE=1 rebuilds it)"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || die "debootstrap and chroot need root: sudo $0"

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

tmpbase="${TMPDIR:-/var/tmp}"
# About 0.6 GB for the root, as much again for docker's copy.
free_kb=$(df -Pk "$tmpbase" | awk 'NR==2 {print $4}')
[ "$free_kb" -ge 2000000 ] || die "need 2 GB free under $tmpbase, have $((free_kb / 1024)) MB"

root=$(mktemp -d "$tmpbase/locktorture-images.XXXXXX")
cleanup() {
  mountpoint -q "$root/proc" && umount -l "$root/proc" || true
  rm -rf --one-file-system "$root"
  rm -f "$root.log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
say "debootstrap --variant=minbase $SUITE into $root (from $MIRROR)"
debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 ||
  { tail -20 "$root.log" >&2; rm -f "$root.log"; die "debootstrap failed"; }
rm -f "$root.log"

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
echo "deb $MIRROR $SUITE main" >"$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"

say "installing $PACKAGES"
# shellcheck disable=SC2086
chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c \
  "apt-get update -qq && apt-get install -y -qq --no-install-recommends $PACKAGES && apt-get clean" >"$root.log" 2>&1 ||
  { tail -30 "$root.log" >&2; rm -f "$root.log"; die "apt-get install in the chroot failed"; }
rm -f "$root.log"
umount -l "$root/proc"

rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/log/*.log \
  "$root/usr/sbin/policy-rc.d" "$root/etc/resolv.conf"
: >"$root/etc/resolv.conf"

say "docker import -> $IMAGE"
tar -C "$root" --numeric-owner -c . | docker import \
  --change "ENV PATH=$PGBIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change 'CMD ["/bin/bash"]' \
  --message "locktorture servers from Debian $SUITE: $PACKAGES" \
  - "$IMAGE" >/dev/null
size=$(docker image inspect --format '{{.Size}}' "$IMAGE")
say "built $IMAGE ($((size / 1024 / 1024)) MB) in $(($(date +%s) - start))s"
