#!/bin/sh
# Opens, then dies on its first request, as a crashing client does.
read -r line
echo '{"id":0,"type":"ok"}'
read -r line
echo "crash.sh: segmentation fault (pretend)" >&2
kill -SEGV $$
