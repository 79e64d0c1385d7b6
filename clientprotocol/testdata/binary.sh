#!/bin/sh
# Answers open with the bytes of the file $BINARY (random binary: terminal
# escapes, carriage returns, bytes that are not UTF-8), then exits.
read -r line
cat "$BINARY"
exit 0
