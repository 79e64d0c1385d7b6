#!/usr/bin/python3
"""locktorture adapter for python-etcd3's Lock (Debian python3-etcd3) over etcd.

As python-etcd3's docs show (https://python-etcd3.readthedocs.io/en/latest/usage.html#locks):

    etcd = etcd3.client()
    lock = etcd.lock('toot', ttl=20)
    lock.acquire(); ...; lock.release()

one client per process, a Lock per acquisition (etcd.lock(name, ttl)),
acquire(timeout=0) to try once, release() to give it back. Each acquire
grants a lease of ttl seconds and puts the lock key with it if the key does
not exist; the Lock's docstring: "ttl: length of time for the lock to live
for in seconds. The lock will be released after this time elapses, unless
refreshed" — nothing refreshes it unless the application calls refresh(),
and this one does not (the harness's critical sections fit the lease).

Lease: the TTL etcd granted (ttl_ms rounded up to whole seconds, as the
library's ttl is an int; etcd may raise it to its minimum) less what the
acquire took. release() is a transaction that deletes the key only if it
still holds this Lock's uuid: False is "not held". No fence.

Credentials: python-etcd3 sends its token as a gRPC call credential, which
gRPC refuses over plaintext ("Established channel does not have a
sufficient security level to transfer call credential"): run it with --tls
(security: tls; client-check --tls), and it dials etcd with auth.etcd.tls's
files (ca_cert, cert_key, cert_cert).

Run with /usr/bin/python3 (Debian's python3-etcd3 is installed for it):
  locktorture run --backend python-etcd3 --scenario baseline --tls
  locktorture client-check --exec '/usr/bin/python3 clients/python/etcd3_lock.py' --exec-servers etcd --tls
"""
import math
import time

import etcd3
import etcd3.exceptions
import lt_protocol as lt


class Etcd3:
    def __init__(self):
        self.client = None
        self.ttl = 1
        self.held = {}  # key -> etcd3 Lock

    def open(self, req):
        addrs = (req.get("servers") or {}).get("etcd") or []
        if not addrs:
            raise ValueError("no etcd server given (exec.servers: [etcd])")
        host, port = self.target(req, addrs)
        # The library's ttl is whole seconds: round up, report what etcd grants.
        self.ttl = max(1, math.ceil(req.get("ttl_ms", 1000) / 1000.0))
        bound = req.get("timeout_ms", 500) / 1000.0 * 0.7
        kw = {}
        a = lt.auth_of(req, "etcd")
        if a.get("username"):
            kw["user"], kw["password"] = a["username"], a.get("password") or ""
        t = a.get("tls")
        if t:
            kw["ca_cert"] = t.get("ca")
            if t.get("cert"):
                kw["cert_cert"], kw["cert_key"] = t["cert"], t.get("key")
            if t.get("server_name"):
                # We dial our link (127.0.0.1:port); the certificate names the server.
                kw["grpc_options"] = [("grpc.ssl_target_name_override", t["server_name"])]
        # timeout: every gRPC call's deadline. Connecting (TLS, then the
        # login the library makes at once) gets open's time; every call
        # after it a deadline below the harness's.
        self.client = etcd3.client(host=host, port=port, timeout=8, **kw)
        self.client.status()
        self.client.timeout = bound
        lt.log("open: process %s, etcd %s, ttl %ds, tls %s, python-etcd3 %s" % (
            req.get("process"), ",".join(addrs), self.ttl, bool(t), getattr(etcd3, "__version__", "?")))
        return {"type": "ok", "abilities": []}

    @staticmethod
    def target(req, addrs):
        """host and port for etcd3.client: every member's address.

        python-etcd3 0.12 dials the one gRPC target '{host}:{port}' (its
        MultiEndpointEtcd3Client came later), and gRPC takes a target that
        names several addresses, ipv4:a:p,b:q,c:r, as it would a DNS name
        resolving to every member: its pick_first policy moves to the next
        address when the member it uses goes away (failover-leader kills
        it). Given as host 'ipv4:a:p,b:q,c' and port r. With one member, a
        host that is not an IPv4 address, or members whose credentials
        differ (one TLS name override serves them all), the first only.
        """
        hosts = [lt.host_port(a) for a in addrs]
        auth = (req.get("auth") or {}).get("etcd")
        same_auth = not isinstance(auth, list) or all(x == auth[0] for x in auth)
        def ipv4(h):
            parts = h.split(".")
            return len(parts) == 4 and all(p.isdigit() for p in parts)
        if len(hosts) < 2 or not same_auth or not all(ipv4(h) for h, _ in hosts):
            return hosts[0]
        last_host, last_port = hosts[-1]
        return "ipv4:" + ",".join(addrs[:-1] + [last_host]), last_port

    def acquire(self, key):
        lock = self.client.lock(key, ttl=self.ttl)
        start = time.monotonic()
        if not lock.acquire(timeout=0):
            return {"type": "fail", "error": "busy"}
        self.held[key] = lock
        granted = lock.lease.ttl if lock.lease is not None else self.ttl
        lease = granted - (time.monotonic() - start)
        return {"type": "ok", "lease_ms": max(int(lease * 1000), 0)}

    def release(self, key):
        lock = self.held.pop(key, None)
        if lock is None:
            return {"type": "fail", "error": "not held"}
        if lock.release():
            return {"type": "ok"}
        return {"type": "fail", "error": "not held"}  # the lease ran out: the key is gone or another's

    def give_back(self, key):
        lock = self.held.pop(key, None)
        if lock is not None:
            lock.release()

    def close(self):
        self.client.close()


if __name__ == "__main__":
    lt.serve(Etcd3())
