#!/bin/sh
# Answers open with a line that is not JSON.
read -r line
echo '{"id":0,"type":"ok"'
sleep 1000
