#!/bin/sh
# A client that keeps what it holds, of one key: an acquire of a held key
# is busy, a release of a key not held is "not held".
held=0
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"op":"open"'*) echo "{\"id\":$id,\"type\":\"ok\"}" ;;
    *'"op":"acquire"'*)
      if [ "$held" = 1 ]; then
        echo "{\"id\":$id,\"type\":\"fail\",\"error\":\"busy\"}"
      else
        held=1
        echo "{\"id\":$id,\"type\":\"ok\",\"fence\":$id}"
      fi ;;
    *'"op":"release"'*)
      if [ "$held" = 1 ]; then
        held=0
        echo "{\"id\":$id,\"type\":\"ok\"}"
      else
        echo "{\"id\":$id,\"type\":\"fail\",\"error\":\"not held\"}"
      fi ;;
    *'"op":"close"'*) echo "{\"id\":$id,\"type\":\"ok\"}"; exit 0 ;;
  esac
done
