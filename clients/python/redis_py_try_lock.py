#!/usr/bin/python3
"""locktorture adapter for redis-py's Lock, taken with blocking=False.

Written from docs/client-protocol.md alone, as a user wraps a lock:
  - each acquire tries once (blocking=False) with the lease the harness
    asks for (ttl_ms), and answers ok / fail "busy" / info;
  - every Redis call is bounded below timeout_ms, with no retries, so a
    reply comes in time, and a timeout or a lost connection is info;
  - a grant that comes too late (the harness has given up on the request,
    recorded info, and will never release it) is given back at once;
  - close is answered ok, then the program exits; so does the end of stdin.

Run it with /usr/bin/python3 (Debian's python3-redis is installed for it):
  locktorture run --scenario baseline --exec '/usr/bin/python3 clients/python/redis_py_try_lock.py'
  locktorture client-check --exec '/usr/bin/python3 clients/python/redis_py_try_lock.py'
"""
import json
import queue
import sys
import threading
import time

import redis
from redis.exceptions import ConnectionError, LockError, LockNotOwnedError, TimeoutError


def send(msg):
    sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def reader(q):
    """Reads requests as they come, stamping each with its arrival: the
    harness writes a request and starts its timeout at once, so the
    arrival is when the timeout started, even while we are busy."""
    for line in sys.stdin:
        line = line.strip()
        if line:
            q.put((time.monotonic(), json.loads(line)))
    q.put((time.monotonic(), None))  # stdin ended: the harness is gone


def redis_auth(req, i=0):
    """redis.Redis keyword arguments for the open request's auth.redis
    (docs/client-protocol.md#credentials): one object for every server, or
    a list in the order of servers.redis. Empty when the servers ask for
    nothing."""
    a = (req.get("auth") or {}).get("redis")
    if isinstance(a, list):
        a = a[i] if i < len(a) else None
    if not a:
        return {}
    kw = {}
    if a.get("username"):
        kw["username"] = a["username"]
    if a.get("password"):
        kw["password"] = a["password"]
    t = a.get("tls")
    if t:
        import ssl
        kw["ssl"] = True
        kw["ssl_ca_certs"] = t.get("ca") or None
        kw["ssl_certfile"] = t.get("cert") or None
        kw["ssl_keyfile"] = t.get("key") or None
        if t.get("insecure_skip_verify"):
            kw["ssl_cert_reqs"] = ssl.CERT_NONE
            kw["ssl_check_hostname"] = False
        else:
            kw["ssl_cert_reqs"] = ssl.CERT_REQUIRED
            # We dial our link (127.0.0.1:port), the certificate names the
            # server (server_name): redis-py cannot check another name than
            # the one it dials, so the name is checked only when they agree;
            # the chain is checked against the CA either way.
            host = (req.get("servers") or {}).get("redis", [""])[i].rsplit(":", 1)[0]
            kw["ssl_check_hostname"] = t.get("server_name", host) == host
    return kw


class Adapter:
    def __init__(self):
        self.r = None
        self.ttl_s = 1.0
        self.timeout_s = 0.5
        self.held = {}  # key -> redis.lock.Lock

    def open(self, req):
        addrs = (req.get("servers") or {}).get("redis") or []
        if not addrs:
            raise ValueError("no redis server given")
        host, port = addrs[0].rsplit(":", 1)  # addresses are host:port
        self.ttl_s = req["ttl_ms"] / 1000.0
        self.timeout_s = req["timeout_ms"] / 1000.0
        # Bounded below the harness's timeout, so our answer arrives in
        # time; no retries (a retried SET could hide that the first took).
        bound = self.timeout_s * 0.6
        # client_name: the harness's kill-session finds this client's
        # connections by it (CLIENT KILL of those named locktorture-p<N>).
        self.r = redis.Redis(host=host, port=int(port), socket_timeout=bound,
                             socket_connect_timeout=bound, retry_on_timeout=False,
                             client_name="locktorture-p%s" % req.get("process"), **redis_auth(req))
        self.r.ping()
        log("open: process %s, redis %s, ttl %.3fs, timeout %.3fs" % (req.get("process"), addrs[0], self.ttl_s, self.timeout_s))
        return {"type": "ok", "abilities": []}

    def acquire(self, key, late):
        lock = self.r.lock("lock:" + key, timeout=self.ttl_s, blocking=False, thread_local=False)
        start = time.monotonic()
        if not lock.acquire(blocking=False):
            return {"type": "fail", "error": "busy"}
        if late():
            # The harness gave up on this request: it recorded info and
            # will never release the lock. Give it back now.
            try:
                lock.release()
                log("acquire %s: granted too late; given back" % key)
            except Exception as e:
                log("acquire %s: granted too late; giving it back failed: %r" % (key, e))
            return {"type": "info", "error": "granted after the timeout; given back"}
        self.held[key] = lock
        lease_ms = int((self.ttl_s - (time.monotonic() - start)) * 1000)
        return {"type": "ok", "lease_ms": max(lease_ms, 0)}

    def release(self, key):
        lock = self.held.pop(key, None)
        if lock is None:
            return {"type": "fail", "error": "not held"}
        try:
            lock.release()
        except LockNotOwnedError:
            return {"type": "fail", "error": "not held"}  # the lease ran out
        except LockError as e:
            return {"type": "fail", "error": str(e)}
        return {"type": "ok"}


def main():
    q = queue.Queue()
    threading.Thread(target=reader, args=(q,), daemon=True).start()
    a = Adapter()
    while True:
        arrived, req = q.get()
        if req is None:
            return
        rid, op = req.get("id"), req.get("op")

        def late():
            # Late when the harness's timeout has (nearly) run out, or when
            # its next request is already here: it sends one only after a
            # reply or a timeout.
            return time.monotonic() - arrived > a.timeout_s * 0.9 or not q.empty()

        try:
            if op == "open":
                reply = a.open(req)
            elif op == "acquire":
                reply = a.acquire(req["key"], late)
            elif op == "release":
                reply = a.release(req["key"])
            elif op == "close":
                send({"id": rid, "type": "ok"})
                return
            else:
                reply = {"type": "fail", "error": "unknown op %r" % op}
        except (TimeoutError, ConnectionError) as e:
            # The request may have reached the server: nobody knows.
            reply = {"type": "info", "error": repr(e)}
        except Exception as e:
            log("%s: %r" % (op, e))
            reply = {"type": "info", "error": repr(e)}
        reply["id"] = rid
        send(reply)


if __name__ == "__main__":
    main()
