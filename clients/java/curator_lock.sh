#!/bin/sh
# Starts clients/java/CuratorLock.java, the locktorture adapter for Apache
# Curator's InterProcessMutex (the curator row; docs/client-protocol.md),
# against Debian's jars: libcurator-recipes-java's curator-recipes.jar,
# whose manifest names the rest (curator-framework, curator-client,
# zookeeper, guava, slf4j-api), and slf4j-simple (libslf4j-java) for a
# quiet log on stderr.
#
# The adapter is compiled once, not at every start (a run starts a JVM per
# client): into a cache directory named by the hash of CuratorLock.java and
# of the compiler's path, under $XDG_CACHE_HOME (or ~/.cache)/locktorture/
# java, else $TMPDIR/locktorture-java-$UID. Clients started together wait
# for one compile (flock); `curator_lock.sh --build` only compiles (the
# curator row does, before its clients start: backends/java.go), so that
# no client's open waits on javac. The JDK is Debian's default
# (/usr/lib/jvm/default-java, from default-jdk-headless), else the javac on
# PATH ($JAVA_HOME/bin/javac when JAVA_HOME is set); the java beside that
# javac runs the adapter.
#
# A missing JDK or Curator, or a compile that fails, is one line on stderr
# and exit status 69 (EX_UNAVAILABLE): the harness stops the run with that
# line (exit 255) and client-check says it. `make deps` installs both.
#
#   locktorture client-check --exec '/bin/sh clients/java/curator_lock.sh' --exec-servers zookeeper
set -eu

die() {
	echo "curator_lock: $*" >&2
	exit 69
}

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
src=$here/CuratorLock.java
[ -f "$src" ] || die "$src is missing (it ships beside this script)"

javac=
if [ -n "${JAVA_HOME:-}" ]; then
	[ -x "$JAVA_HOME/bin/javac" ] || die "no Java compiler (javac) in JAVA_HOME=$JAVA_HOME: a JDK is needed to build the adapter (unset JAVA_HOME for Debian's; make deps installs default-jdk-headless)"
	javac=$(readlink -f "$JAVA_HOME/bin/javac")
else
	for c in /usr/lib/jvm/default-java/bin/javac "$(command -v javac 2>/dev/null || true)"; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			javac=$(readlink -f "$c")
			break
		fi
	done
fi
[ -n "$javac" ] || die "no Java compiler (javac): a JDK is needed to build the adapter; make deps installs default-jdk-headless"
java=$(dirname "$javac")/java
[ -x "$java" ] || die "no java beside $javac; make deps installs default-jdk-headless"

jars=/usr/share/java
for j in curator-recipes curator-framework curator-client zookeeper slf4j-simple; do
	[ -f "$jars/$j.jar" ] || die "no $jars/$j.jar: Apache Curator's jars are missing; make deps installs libcurator-recipes-java"
done
cp="$jars/curator-recipes.jar:$jars/slf4j-simple.jar"

key=$({ cat "$src"; echo "$javac"; } | sha256sum | cut -c1-20)
base=${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/locktorture/java
if ! mkdir -p "$base" 2>/dev/null || ! [ -w "$base" ]; then
	base=${TMPDIR:-/tmp}/locktorture-java-$(id -u)
	mkdir -p "$base" || die "cannot make a cache directory $base"
fi
dir=$base/curator-$key

# What a compile killed midway (its client stopped) left behind.
find "$base" -maxdepth 1 -name '.build.*' -mmin +10 -exec rm -rf {} + 2>/dev/null || true

if [ ! -f "$dir/CuratorLock.class" ]; then
	(
		if command -v flock >/dev/null 2>&1; then
			exec 9>"$base/.lock"
			flock 9
		fi
		[ -f "$dir/CuratorLock.class" ] && exit 0
		tmp=$(mktemp -d "$base/.build.XXXXXX")
		if ! "$javac" -nowarn -encoding UTF-8 -cp "$cp" -d "$tmp" "$src" </dev/null >"$tmp.log" 2>&1; then
			msg=$(grep -m1 -i 'error' "$tmp.log" || head -n1 "$tmp.log")
			rm -rf "$tmp" "$tmp.log"
			die "compiling $src with $javac failed: $msg"
		fi
		rm -f "$tmp.log"
		mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp" # another compile got there first
	)
fi

[ "${1:-}" = --build ] && exit 0

# A fast start (the C1 compiler only, a small heap, class data sharing),
# as the harness's own ZooKeeper members; no hsperfdata file in /tmp.
exec "$java" -Xshare:auto -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xms16m -Xmx128m -XX:-UsePerfData \
	-Djava.net.preferIPv4Stack=true -cp "$dir:$cp" CuratorLock "$@"
