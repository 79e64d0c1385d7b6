#!/bin/sh
# A minimal client that follows the protocol: every acquire is granted
# (fence = id), every release ok; late and extra lines are exercised:
# an extend event pair after each acquire, and a lost event.
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"op":"open"'*) echo "{\"id\":$id,\"type\":\"ok\",\"abilities\":[\"extend\"]}" ;;
    *'"op":"acquire"'*)
      echo "{\"id\":$id,\"type\":\"ok\",\"fence\":$id,\"lease_ms\":900}"
      echo '{"event":"extend","key":"k0","phase":"invoke"}'
      echo '{"event":"extend","key":"k0","type":"ok","lease_ms":1000}'
      echo '{"event":"lost","key":"k0"}' ;;
    *'"op":"release"'*) echo "{\"id\":$id,\"type\":\"fail\",\"error\":\"not held\"}" ;;
    *'"op":"close"'*) echo "{\"id\":$id,\"type\":\"ok\"}"; exit 0 ;;
  esac
done
