#!/bin/sh
# Never answers open; a child of its own hangs too (the whole group must go).
read -r line
echo "hang-open.sh: waiting forever" >&2
sleep 1000 &
wait
