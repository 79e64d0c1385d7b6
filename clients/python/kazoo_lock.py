#!/usr/bin/python3
"""locktorture adapter for kazoo's Lock (Debian python3-kazoo) over ZooKeeper.

As kazoo's docs show (https://kazoo.readthedocs.io/en/latest/api/recipe/lock.html):

    zk = KazooClient()
    zk.start()
    lock = zk.Lock("/lockpath", "my-identifier")

one KazooClient (one session) per client process, one Lock per key kept
across acquisitions, acquire(blocking=False, timeout=...) to try once (the
timeout bounds kazoo's own retries on a lost connection), release() to
give it back. The lock is an ephemeral sequential znode: it lasts as long
as the session, which kazoo's own connection thread keeps alive with pings.

kazoo's lock module says: "It's highly recommended to add a state listener
with add_listener and watch for LOST and SUSPENDED state changes and
re-act appropriately. In the event that a LOST state occurs, its certain
that the lock and/or the lease has been lost." The adapter does: on
SUSPENDED (the connection is gone; the session may or may not survive) and
on LOST (the session expired) it tells the harness each lock it holds is
lost, as an application that stops its work then would.

Lease: the session timeout asked for (ttl_ms, whole milliseconds; the
server may raise it to 2 ticks) less what the acquire took. No fence (the
Lock exposes none).

Run with /usr/bin/python3 (Debian's python3-kazoo is installed for it):
  locktorture run --backend kazoo --scenario baseline
  locktorture client-check --exec '/usr/bin/python3 clients/python/kazoo_lock.py' --exec-servers zookeeper
"""
import time

import lt_protocol as lt
from kazoo.client import KazooClient, KazooState
from kazoo.security import CREATOR_ALL_ACL

ROOT = "/locktorture-kazoo"


class Kazoo:
    def __init__(self):
        self.zk = None
        self.ttl_s = 1.0
        self.bound = 0.4
        self.locks = {}  # key -> kazoo Lock, kept across acquisitions
        self.held = set()  # keys this client holds

    def open(self, req):
        addrs = (req.get("servers") or {}).get("zookeeper") or []
        if not addrs:
            raise ValueError("no zookeeper server given (exec.servers: [zookeeper])")
        self.ttl_s = req.get("ttl_ms", 1000) / 1000.0
        self.bound = req.get("timeout_ms", 500) / 1000.0 * 0.7
        kw = {}
        a = lt.auth_of(req, "zookeeper")
        if a.get("auth"):
            kw["auth_data"] = [(a.get("scheme") or "digest", a["auth"])]
            kw["default_acl"] = CREATOR_ALL_ACL  # our znodes: only our user
        self.zk = KazooClient(hosts=",".join(addrs), timeout=self.ttl_s, **kw)
        self.zk.add_listener(self.state)
        self.zk.start(timeout=8)
        import kazoo
        lt.log("open: process %s, zookeeper %s, session timeout %.3fs, kazoo %s" % (
            req.get("process"), ",".join(addrs), self.ttl_s, getattr(kazoo, "__version__", "?")))
        return {"type": "ok", "abilities": []}

    def state(self, s):
        # Called from kazoo's own thread: only say it, never block.
        lt.log("session state: %s" % s)
        if s in (KazooState.SUSPENDED, KazooState.LOST):
            for key in list(self.held):
                lt.lost(key)

    def lock(self, key):
        l = self.locks.get(key)
        if l is None:
            l = self.locks[key] = self.zk.Lock(ROOT + "/" + key, "locktorture")
        return l

    def acquire(self, key):
        l = self.lock(key)
        start = time.monotonic()
        if l.acquire(blocking=False, timeout=self.bound):
            self.held.add(key)
            lease = self.ttl_s - (time.monotonic() - start)
            return {"type": "ok", "lease_ms": max(int(lease * 1000), 0)}
        if self.zk.state != KazooState.CONNECTED or time.monotonic() - start >= self.bound:
            # acquire gave up retrying: its create may have reached the server.
            return {"type": "info", "error": "kazoo gave up (state %s)" % self.zk.state}
        return {"type": "fail", "error": "busy"}

    def release(self, key):
        if key not in self.held:
            return {"type": "fail", "error": "not held"}
        self.held.discard(key)
        if self.lock(key).release():
            return {"type": "ok"}
        return {"type": "fail", "error": "not held"}

    def give_back(self, key):
        self.held.discard(key)
        self.lock(key).release()

    def close(self):
        self.zk.stop()
        self.zk.close()


if __name__ == "__main__":
    lt.serve(Kazoo())
