#!/bin/sh
# Opens, grants the first acquire, then never answers again.
read -r line
echo '{"id":0,"type":"ok"}'
read -r line
echo '{"id":1,"type":"ok","fence":1}'
echo "wedge.sh: stuck" >&2
sleep 1000
