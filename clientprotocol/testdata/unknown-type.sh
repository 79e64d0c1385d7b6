#!/bin/sh
# Opens, then answers an acquire with a type outside ok, fail, info.
read -r line
echo '{"id":0,"type":"ok"}'
read -r line
echo '{"id":1,"type":"maybe"}'
sleep 1000
