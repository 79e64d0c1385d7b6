#!/usr/bin/env bash
# Installs the lock servers locktorture starts (from Debian packages) when
# they are missing. As root it installs them; with passwordless sudo it uses
# sudo; otherwise it says what to run. Nothing is started here: the harness
# starts its own servers on free loopback ports.
set -euo pipefail

missing=()
have() { command -v "$1" >/dev/null 2>&1; }
have redis-server   || missing+=(redis-server)
have redis-sentinel || missing+=(redis-sentinel)
have etcd           || missing+=(etcd-server)
# ZooKeeper runs as java -cp zookeeper.jar (no init scripts): it needs the
# package's jars and a JRE.
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
have java           || missing+=(default-jre-headless)
# Headless Chromium opens the HTML reports in the browser tests.
[ -x /usr/bin/chromium ] || missing+=(chromium)
# The Python client adapter (clients/python) wraps redis-py's Lock.
{ python3 -c 'import redis' || /usr/bin/python3 -c 'import redis'; } >/dev/null 2>&1 || missing+=(python3-redis)
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && ! have postgres; then
  missing+=(postgresql)
fi
# MariaDB: mariadbd is in /usr/sbin, off a user's PATH.
{ have mariadbd || [ -x /usr/sbin/mariadbd ]; } && have mariadb-install-db || missing+=(mariadb-server)

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: redis-server, redis-sentinel, etcd, zookeeper, java, postgres, mariadb, chromium and python3-redis are installed"
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
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The packages may start system services on their default ports; the harness
# never uses them, so stop them to keep the machine quiet.
for svc in redis-server redis-sentinel etcd postgresql zookeeper mariadb; do
  $sudo service "$svc" stop >/dev/null 2>&1 || true
done
echo "deps: installed ${missing[*]}"
