#!/bin/sh
# A good client that writes 5 MB to stderr before it opens.
echo "chatty.sh: first line" >&2
head -c 5000000 /dev/zero | tr '\0' y >&2
echo >&2
echo "chatty.sh: last line" >&2
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"op":"close"'*) echo "{\"id\":$id,\"type\":\"ok\"}"; exit 0 ;;
    *) echo "{\"id\":$id,\"type\":\"ok\"}" ;;
  esac
done
