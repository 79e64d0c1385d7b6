#!/bin/sh
# pkggraph.sh [OUT]: draws the graph of this module's packages that the
# locktorture command and the locktest library are built from (tests and the
# standalone programs under findings/reproducers and clients/ left out). An
# arrow A -> B means A imports B; an arrow that a longer path already implies
# is not drawn (graphviz's tred), so each package stands above what it uses.
# OUT ends in .svg or .png (default: docs/img/packages.png). Needs Go and
# graphviz (apt-get install graphviz). Run it from the repository's root.
set -eu

out=${1:-docs/img/packages.png}
case $out in
*.svg) format=svg ;;
*.png) format=png ;;
*)
	echo "pkggraph.sh: $out: the picture is .svg or .png" >&2
	exit 254
	;;
esac
for tool in go dot tred; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "pkggraph.sh: $tool not found (go from go.dev; dot and tred: apt-get install graphviz)" >&2
		exit 255
	fi
done

mod=$(go list -m)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One line per package of the module: its path, then the module's packages it
# imports (non-test imports only), every path relative to the module.
# (go list first, alone: a failure of it stops the script, set -e, rather
# than drawing what a pipe got before it failed.)
go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{end}}' \
	./cmd/locktorture ./locktest >"$tmp/list"
awk -v mod="$mod" '
	function rel(p) { return p == mod ? "." : substr(p, length(mod) + 2) }
	function ours(p) { return p == mod || index(p, mod "/") == 1 }
	ours($1) {
		line = rel($1)
		for (i = 2; i <= NF; i++) if (ours($i)) line = line " " rel($i)
		print line
	}' "$tmp/list" | sort >"$tmp/pkgs"

# The DOT graph: a node per package, coloured by its top folder; the edges.
awk '
	BEGIN {
		# one pastel per top folder, in the order first seen
		n = split("#dbe9f6 #f6e3d6 #e0f0dc #f3dcea #e9e2f6 #f6f1d3 #d9f0ee #eeeeee #f6d9d9 #e3ecd0 #fbe7c6 #d6e6f2 #efd9f6 #d9f6e4 #f2f2d0 #e6dcd2", pal, " "); used = 0
		print "digraph packages {"
		print "  rankdir=TB; nodesep=0.25; ranksep=0.45;"
		print "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11, margin=\"0.12,0.04\"];"
		print "  edge [color=\"#555555\", arrowsize=0.6];"
	}
	{
		top = $1; sub(/\/.*/, "", top)
		if (!(top in colour)) colour[top] = pal[used++ % n + 1]
		printf "  \"%s\" [fillcolor=\"%s\"];\n", $1, colour[top]
		for (i = 2; i <= NF; i++) printf "  \"%s\" -> \"%s\";\n", $1, $i
	}
	END { print "}" }' "$tmp/pkgs" >"$tmp/full.dot"

tred "$tmp/full.dot" >"$tmp/reduced.dot"
mkdir -p "$(dirname "$out")"
dot -T"$format" -Gdpi=110 "$tmp/reduced.dot" -o "$tmp/out.$format"
mv "$tmp/out.$format" "$out"
echo "$out: $(wc -l <"$tmp/pkgs") packages"
