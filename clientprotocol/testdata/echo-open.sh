#!/bin/sh
# Echoes the open request (its auth holds the servers' password) after
# $PAD, to stdout (not a message of the protocol unless PAD is empty) and
# to stderr, keeps a copy in $GOT for the test to learn the password, and
# exits without answering.
read -r line
printf '%s\n' "$line" > "$GOT"
printf '%s%s\n' "$PAD" "$line"
printf '%s%s\n' "$PAD" "$line" >&2
exit 3
