#!/bin/sh
# Answers open with 50 MB and no newline, then waits.
read -r line
head -c 50000000 /dev/zero | tr '\0' x
sleep 1000
