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
# alone.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
have() { command -v "$1" >/dev/null 2>&1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

list=""
if [ -n "${LOCKTORTURE:-}" ]; then
  list=$("$LOCKTORTURE" list packages)
elif have go; then
  list=$(go run ./cmd/locktorture list packages)
fi

if [ -n "$list" ] && have dpkg-query; then
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
*)
  echo "deps: DEPS=$DEPS: want all (the default), rows or servers" >&2
  exit 1
  ;;
esac

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
