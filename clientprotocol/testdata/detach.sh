#!/bin/sh
# A good client that starts a detached process of its own (a new session,
# so out of the client's process group) which holds its stdout and stderr.
setsid sleep 3600 &
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"op":"close"'*) echo "{\"id\":$id,\"type\":\"ok\"}"; exit 0 ;;
    *'"op":"acquire"'*) echo "{\"id\":$id,\"type\":\"ok\",\"fence\":$id}" ;;
    *) echo "{\"id\":$id,\"type\":\"ok\"}" ;;
  esac
done
