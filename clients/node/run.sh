#!/bin/sh
# Starts a Node.js adapter of clients/node (docs/client-protocol.md) with
# the node on PATH and Debian's node libraries (node-redis, node-pg):
#
#   clients/node/run.sh redis-lock.js      # the articles' Redis lock, renewing
#   clients/node/run.sh pg-lock.js [xact]  # a PostgreSQL advisory lock
#   clients/node/run.sh ./my-adapter.js    # your own (a path: as given)
#
# A bare name is the adapter beside this script. The libraries are found
# where Debian's packages put them (/usr/share/nodejs, /usr/lib/nodejs,
# /usr/lib/<arch>/nodejs: a node from elsewhere, NodeSource's or
# /usr/local's, does not look there by itself), else in the cache `make
# deps` fills when apt cannot install them beside that node (they depend
# on Debian's nodejs): the packages' .debs unpacked under
# /var/cache/locktorture/node or ${XDG_CACHE_HOME:-~/.cache}/locktorture/node
# (LOCKTORTURE_NODE_CACHE names another). Both go on NODE_PATH, Debian's
# first, after any NODE_PATH of yours.
#
# LOCKTORTURE_NODE names another node than the one on PATH.
#
# No node, or no such adapter: one line on stderr and exit status 69
# (EX_UNAVAILABLE); the harness stops the run with that line (exit 255) and
# client-check says it. A library missing is the adapter's own line, the
# same way (protocol.js's need).
#
#   locktorture client-check --exec 'clients/node/run.sh redis-lock.js'
set -eu

die() {
	echo "clients/node: $*" >&2
	exit 69
}

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
[ $# -ge 1 ] || die "no adapter named: run.sh ADAPTER.js [ARGS] (redis-lock.js, pg-lock.js, or a path to yours)"
script=$1
shift
case $script in
*/*) ;;
*) script=$here/$script ;;
esac
[ -f "$script" ] || die "no adapter $script"

if [ -n "${LOCKTORTURE_NODE:-}" ]; then
	node=$LOCKTORTURE_NODE
	[ -f "$node" ] && [ -x "$node" ] || die "no node (Node.js) at LOCKTORTURE_NODE=$node: name one, or unset it for the node on PATH (make deps installs Debian's nodejs)"
else
	node=$(command -v node 2>/dev/null || command -v nodejs 2>/dev/null || true)
	[ -n "$node" ] || die "no node (Node.js) on PATH: make deps installs Debian's nodejs"
fi

path=${NODE_PATH:-}
add() {
	[ -d "$1" ] || return 0
	path=${path:+$path:}$1
}
arch=$(uname -m)-linux-gnu
add /usr/share/nodejs
add /usr/lib/nodejs
add "/usr/lib/$arch/nodejs"
for c in "${LOCKTORTURE_NODE_CACHE:-}" /var/cache/locktorture/node "${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/locktorture/node"; do
	[ -n "$c" ] || continue
	add "$c/usr/share/nodejs"
	add "$c/usr/lib/nodejs"
	add "$c/usr/lib/$arch/nodejs"
done
NODE_PATH=$path
export NODE_PATH
exec "$node" "$script" "$@"
