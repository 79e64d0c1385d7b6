#!/usr/bin/python3
"""A redis-py adapter broken on purpose, one way per mode (argv[1]), for
client-check's tests:
  fail-on-timeout  answers fail to a timeout (it must be info)
  keep-late-grant  waits as long as it takes and keeps a grant that came
                   after the harness gave up (it must give it back)
  no-close         never answers close (and keeps running)
  ignore-eof       keeps running when its stdin ends
"""
import json
import sys
import time

import redis

mode = sys.argv[1]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


r, ttl_ms, timeout_s, held = None, 1000, 0.5, {}
for line in sys.stdin:
    req = json.loads(line)
    rid, op = req["id"], req["op"]
    if op == "open":
        host, port = req["servers"]["redis"][0].rsplit(":", 1)
        ttl_ms, timeout_s = req["ttl_ms"], req["timeout_ms"] / 1000.0
        # keep-late-grant waits for Redis as long as it takes.
        bound = 30 if mode == "keep-late-grant" else timeout_s * 0.6
        a = (req.get("auth") or {}).get("redis") or {}  # the run's password (docs/client-protocol.md#credentials)
        r = redis.Redis(host=host, port=int(port), socket_timeout=bound, retry_on_timeout=False,
                        username=a.get("username"), password=a.get("password"))
        send({"id": rid, "type": "ok"})
        continue
    if op == "close":
        if mode != "no-close":
            send({"id": rid, "type": "ok"})
            sys.exit(0)
        continue
    try:
        if op == "acquire":
            lock = r.lock("lock:" + req["key"], timeout=ttl_ms / 1000.0, blocking=False, thread_local=False)
            if lock.acquire(blocking=False):
                held[req["key"]] = lock
                send({"id": rid, "type": "ok"})
            else:
                send({"id": rid, "type": "fail", "error": "busy"})
        elif op == "release":
            lock = held.pop(req["key"], None)
            if lock is None:
                send({"id": rid, "type": "fail", "error": "not held"})
            else:
                lock.release()
                send({"id": rid, "type": "ok"})
    except (redis.exceptions.TimeoutError, redis.exceptions.ConnectionError) as e:
        kind = "fail" if mode == "fail-on-timeout" else "info"
        send({"id": rid, "type": kind, "error": repr(e)})
if mode == "ignore-eof":
    while True:
        time.sleep(1)
