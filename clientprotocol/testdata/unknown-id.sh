#!/bin/sh
# Answers open with an id it was never sent.
read -r line
echo '{"id":7,"type":"ok"}'
sleep 1000
