#!/bin/sh
# Dies at start, as a Python adapter whose import fails: a traceback on
# stderr, exit 1, before it reads the open request.
cat >&2 <<'TRACE'
Traceback (most recent call last):
  File "/home/me/adapter.py", line 3, in <module>
    import redis
ModuleNotFoundError: No module named 'redis'
TRACE
exit 1
