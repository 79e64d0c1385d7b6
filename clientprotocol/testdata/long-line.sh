#!/bin/sh
# Opens, then answers its first request with a 2 MB line.
read -r line
echo '{"id":0,"type":"ok"}'
read -r line
head -c 2000000 /dev/zero | tr '\0' x
echo
sleep 1000
