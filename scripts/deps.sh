#!/usr/bin/env bash
# Installs the lock servers locktorture starts (from Debian packages) when
# they are missing. As root it installs them; with passwordless sudo it uses
# sudo; otherwise it says what to run. Nothing is started here: the harness
# starts its own servers on free loopback ports.
#
# Which packages: every server kind's, from the kind registry
# (`locktorture list packages`; LOCKTORTURE=bin/locktorture names the binary,
# else go run): each "required" one, and each "optional" one apt offers
# (valkey-server where the suite has it); with DEPS=all (the default), each
# "client" one too: the Python libraries of the program rows and their
# drivers (python3-redis, python3-kazoo, python3-etcd3, python3-tooz,
# python3-psycopg2), for Debian's /usr/bin/python3, and the Java row's (a
# JDK, Curator). Besides them: chromium (the browser tests). DEPS=rows:
# the servers and the rows' client libraries, not chromium (what a matrix
# or comparison run needs: the nightly jobs). DEPS=servers: the servers
# alone. DEPS=demo: what `make demo` needs — redis-server, the one server
# of kleppmann-pause — and nothing else (no registry read: no Go build).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
have() { command -v "$1" >/dev/null 2>&1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# node_kit gets the Node.js kit's libraries (clients/node: Debian's
# node-redis and node-pg) for the node on PATH. No node: Debian's nodejs
# and both, from apt. A node apt can install them beside (Debian's
# nodejs): from apt. Another node (NodeSource's, /usr/local's, which
# Debian's node-* packages conflict with through their dependency on
# Debian's nodejs): their .debs and their node-* dependencies, fetched
# with apt-get download and unpacked (dpkg-deb -x) into a cache
# clients/node/run.sh reads — /var/cache/locktorture/node as root, else
# ${XDG_CACHE_HOME:-~/.cache}/locktorture/node — refetched when apt
# offers other versions. No root needed for the cache.
node_kit() {
  local pkgs=(node-redis node-pg) need=() p
  if ! have node && ! have nodejs; then
    missing+=(nodejs "${pkgs[@]}")
    return 0
  fi
  for p in "${pkgs[@]}"; do installed "$p" || need+=("$p"); done
  [ ${#need[@]} -gt 0 ] || return 0
  have apt-get || { missing+=("${need[@]}"); return 0; }
  local cache=${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/locktorture/node
  [ "$(id -u)" -ne 0 ] || cache=/var/cache/locktorture/node
  # What apt offers, as "node-redis=V node-pg=V " (the cache's stamp).
  local want
  want=$(apt-cache show --no-all-versions "${need[@]}" 2>/dev/null | awk -v need="${need[*]}" '
    /^Package:/ {p = $2} /^Version:/ && p != "" {v[p] = $2; p = ""}
    END {n = split(need, ps, " "); for (i = 1; i <= n; i++) if (ps[i] in v) printf "%s=%s ", ps[i], v[ps[i]]; else {print "-"; exit}}
  ')
  if [ -f "$cache/.packages" ] && { [ "$(cat "$cache/.packages")" = "$want" ] || [[ $want == *- ]]; }; then
    return 0 # fetched already (or no apt lists to compare with: kept)
  fi
  if [[ $want == *- ]]; then
    echo "deps: apt offers no ${need[*]} (apt-get update?): the Node.js kit (clients/node) needs them" >&2
    return 1
  fi
  if apt-get install -s -qq "${need[@]}" >/dev/null 2>&1; then
    missing+=("${need[@]}")
    return 0
  fi
  local debs all
  all=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${need[@]}" | grep '^node-' | sort -u)
  mkdir -p "$(dirname "$cache")"
  debs=$(mktemp -d "$(dirname "$cache")/.node-debs.XXXXXX")
  local sandbox=()
  [ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
  # shellcheck disable=SC2086 # one package name a word
  if ! (cd "$debs" && apt-get "${sandbox[@]}" -qq download $all >/dev/null); then
    rm -rf "$debs"
    echo "deps: apt-get download of the Node.js kit's packages failed (${need[*]} and their node-* dependencies)" >&2
    return 1
  fi
  mkdir "$debs/root"
  for p in "$debs"/*.deb; do dpkg-deb -x "$p" "$debs/root"; done
  printf '%s' "$want" >"$debs/root/.packages"
  rm -rf "$cache.old"
  [ ! -d "$cache" ] || mv "$cache" "$cache.old"
  mv "$debs/root" "$cache"
  rm -rf "$debs" "$cache.old"
  echo "deps: ${need[*]} (and their node-* dependencies) unpacked into $cache for $(command -v node || command -v nodejs) $(node --version 2>/dev/null || true): apt cannot install them beside it; clients/node/run.sh reads them there"
}

list=""
if [ "${DEPS:-}" = demo ]; then
  : # the demo's one server is known: no registry to read
elif [ -n "${LOCKTORTURE:-}" ]; then
  list=$("$LOCKTORTURE" list packages)
elif have go; then
  list=$(go run ./cmd/locktorture list packages)
fi

if [ "${DEPS:-}" = demo ]; then
  have redis-server || missing+=(redis-server)
elif [ -n "$list" ] && have dpkg-query; then
  for p in $(awk 'NR > 1 && $3 == "required" {print $1}' <<<"$list" | sort -u); do
    installed "$p" || missing+=("$p")
  done
  for p in $(awk 'NR > 1 && $3 == "optional" {print $1}' <<<"$list" | sort -u); do
    installed "$p" || ! apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || missing+=("$p")
  done
else
  # No registry to read (no Go yet) or no dpkg: the programs themselves.
  have redis-server   || missing+=(redis-server)
  have redis-sentinel || missing+=(redis-sentinel)
  have etcd           || missing+=(etcd-server)
  have etcdctl        || missing+=(etcd-client)
  # ZooKeeper runs as java -cp zookeeper.jar (no init scripts): it needs the
  # package's jars and a JRE.
  [ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
  have java           || missing+=(default-jre-headless)
  if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && ! have postgres; then
    missing+=(postgresql)
  fi
  [ -x /usr/sbin/pgbouncer ] || have pgbouncer || missing+=(pgbouncer)
  [ -x /usr/sbin/mariadbd ] || have mariadbd || missing+=(mariadb-server)
fi
case "${DEPS:-}" in
"" | all | rows)
  # Headless Chromium opens the HTML reports in the browser tests (not
  # for rows: what a matrix or comparison run needs, as the nightly's).
  if [ "${DEPS:-}" != rows ]; then
    [ -x /usr/bin/chromium ] || missing+=(chromium)
  fi
  # The program rows' clients (clients/python): their libraries, from the
  # registry's "client" lines; without it (no Go yet), redis-py's.
  if [ -n "$list" ] && have dpkg-query; then
    for p in $(awk 'NR > 1 && $3 == "client" {print $1}' <<<"$list" | sort -u); do
      installed "$p" || missing+=("$p")
    done
  else
    /usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || missing+=(python3-redis)
  fi
  what="every server kind's packages, chromium and the client libraries"
  [ "${DEPS:-}" != rows ] || what="every server kind's packages and the program rows' client libraries"
  ;;
servers) what="every server kind's packages" ;;
demo) what="what make demo needs (redis-server)" ;;
*)
  echo "deps: DEPS=$DEPS: want all (the default), rows, servers or demo" >&2
  exit 1
  ;;
esac
if [ "${DEPS:-all}" = all ]; then node_kit; fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: $what: installed"
  exit 0
fi

echo "deps: missing Debian packages: ${missing[*]}"
if ! have apt-get; then
  echo "deps: no apt-get here; install ${missing[*]} with your package manager and put them on PATH" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if have sudo && sudo -n true 2>/dev/null; then
    sudo="sudo"
  else
    echo "deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
# shellcheck source=scripts/apt.sh
. scripts/apt.sh
apt_get update -qq
apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The packages may start system services on their default ports; the harness
# never uses them, so stop them to keep the machine quiet.
for p in "${missing[@]}"; do
  case "$p" in
  etcd-server) svc=etcd ;;
  mariadb-server) svc=mariadb ;;
  *) svc=$p ;;
  esac
  $sudo service "$svc" stop >/dev/null 2>&1 || true
done
echo "deps: installed ${missing[*]}"
