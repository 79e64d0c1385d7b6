#!/bin/sh
# Opens, then never reads its stdin again.
read -r line
echo '{"id":0,"type":"ok"}'
sleep 1000
