#!/bin/sh
# Opens, then exits before it is told to close.
read -r line
echo '{"id":0,"type":"ok"}'
echo "early-exit.sh: bye" >&2
exit 0
