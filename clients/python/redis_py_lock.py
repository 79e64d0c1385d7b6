#!/usr/bin/env python3
"""locktorture client adapter for redis-py's Lock (docs/client-protocol.md).

The harness starts one copy per simulated client and speaks JSON lines:
requests on stdin, replies and events on stdout. Anything on stderr goes
to client-N.log in the run's store.

Options (the scenario's backend_options: {exec: {...}}, or the
environment):
  renew: true     (LOCKTORTURE_RENEW=1) a thread extends the lease every
                  TTL/3, as users add one; it sends extend events, and a
                  lost event when an extension fails.
  prefix: "..."   the Redis key prefix of the locks (default "lock:").
  kind: "..."     (LOCKTORTURE_REDIS_KIND) the kind of server to dial, for
                  another Redis-compatible kind than redis (exec.servers
                  names it too); default "redis".
"""
import json
import os
import sys
import threading
import time

try:
    import redis
except ImportError:  # a Python of its own (pyenv, venv) without Debian's python3-redis
    sys.path.append("/usr/lib/python3/dist-packages")
    import redis
from redis.exceptions import LockError, LockNotOwnedError

out_lock = threading.Lock()


def send(msg):
    line = json.dumps(msg, separators=(",", ":"))
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def redis_kind(req):
    """The kind of server this client dials: the option kind, or
    LOCKTORTURE_REDIS_KIND, or redis."""
    opts = req.get("options") or {}
    return str(opts.get("kind") or os.environ.get("LOCKTORTURE_REDIS_KIND") or "redis")


def redis_auth(req, i=0):
    """redis.Redis keyword arguments for the open request's auth of the
    kind dialled (docs/client-protocol.md#credentials): one object for
    every server, or a list in the order of its servers. Empty when the
    servers ask for nothing."""
    a = (req.get("auth") or {}).get(redis_kind(req))
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
            host = (req.get("servers") or {}).get(redis_kind(req), [""])[i].rsplit(":", 1)[0]
            kw["ssl_check_hostname"] = t.get("server_name", host) == host
    return kw


class Held:
    """One lock this client believes it holds, and its renewal thread."""

    def __init__(self, lock):
        self.lock = lock
        self.stop = threading.Event()
        self.thread = None


class Adapter:
    def __init__(self):
        self.r = None
        self.ttl_ms = 1000
        self.renew = False
        self.prefix = "lock:"
        self.held = {}

    def open(self, req):
        servers = req.get("servers") or {}
        kind = redis_kind(req)
        addrs = servers.get(kind) or []
        if not addrs:
            raise ValueError("no %s server given (exec.servers: [%s])" % (kind, kind))
        host, port = addrs[0].rsplit(":", 1)
        timeout = req.get("timeout_ms", 500) / 1000.0
        self.ttl_ms = int(req.get("ttl_ms", 1000))
        opts = req.get("options") or {}
        self.renew = bool(opts.get("renew", os.environ.get("LOCKTORTURE_RENEW", "") not in ("", "0")))
        self.prefix = str(opts.get("prefix", self.prefix))
        # No retries: a timed-out SET may have happened; the harness must
        # hear "info", never a second try that hides it.
        # client_name: the harness's kill-session finds this client's
        # connections by it (CLIENT KILL of those named locktorture-p<N>).
        self.r = redis.Redis(host=host, port=int(port), socket_timeout=timeout,
                             socket_connect_timeout=timeout, retry_on_timeout=False,
                             client_name="locktorture-p%s" % req.get("process"), **redis_auth(req))
        log("open: process %s, redis %s, ttl %dms, renew %s" % (req.get("process"), addrs[0], self.ttl_ms, self.renew))
        return {"type": "ok", "abilities": ["extend"] if self.renew else []}

    def acquire(self, key):
        lock = self.r.lock(self.prefix + key, timeout=self.ttl_ms / 1000.0, blocking=False, thread_local=False)
        start = time.monotonic()
        if not lock.acquire(blocking=False):
            return {"type": "fail", "error": "busy"}
        lease = self.ttl_ms - int((time.monotonic() - start) * 1000)
        h = Held(lock)
        old = self.held.pop(key, None)
        if old:
            old.stop.set()
        self.held[key] = h
        if self.renew:
            h.thread = threading.Thread(target=self.renewal, args=(key, h), daemon=True)
            h.thread.start()
        return {"type": "ok", "lease_ms": max(lease, 0)}

    def renewal(self, key, h):
        every = self.ttl_ms / 3000.0
        while not h.stop.wait(every):
            send({"event": "extend", "key": key, "phase": "invoke"})
            start = time.monotonic()
            try:
                h.lock.extend(self.ttl_ms / 1000.0, replace_ttl=True)
            except LockNotOwnedError as e:
                send({"event": "extend", "key": key, "type": "fail", "error": "not held: %s" % e})
                send({"event": "lost", "key": key})
                return
            except Exception as e:  # timeout, connection lost: unknown
                send({"event": "extend", "key": key, "type": "info", "error": repr(e)})
                send({"event": "lost", "key": key})
                return
            lease = self.ttl_ms - int((time.monotonic() - start) * 1000)
            send({"event": "extend", "key": key, "type": "ok", "lease_ms": max(lease, 0)})

    def release(self, key):
        h = self.held.pop(key, None)
        if h is None:
            return {"type": "fail", "error": "not held"}
        h.stop.set()
        try:
            h.lock.release()
        except LockNotOwnedError:
            return {"type": "fail", "error": "not held"}
        except LockError as e:
            return {"type": "fail", "error": str(e)}
        return {"type": "ok"}


def main():
    a = Adapter()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        rid, op = req.get("id"), req.get("op")
        try:
            if op == "open":
                reply = a.open(req)
            elif op == "acquire":
                reply = a.acquire(req["key"])
            elif op == "release":
                reply = a.release(req["key"])
            elif op == "close":
                send({"id": rid, "type": "ok"})
                return
            else:
                reply = {"type": "fail", "error": "unknown op %r" % op}
        except (redis.exceptions.TimeoutError, redis.exceptions.ConnectionError) as e:
            # The request may have reached the server: nobody knows.
            reply = {"type": "info", "error": repr(e)}
        except Exception as e:
            log("error on %s: %r" % (op, e))
            reply = {"type": "info", "error": repr(e)}
        reply["id"] = rid
        send(reply)


if __name__ == "__main__":
    main()
