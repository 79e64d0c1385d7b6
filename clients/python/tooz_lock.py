#!/usr/bin/python3
"""locktorture adapter for tooz's locks (Debian python3-tooz), one driver
per row: tooz_lock.py redis | zookeeper | postgresql | mysql.

As tooz's docs show (https://docs.openstack.org/tooz/latest/user/tutorial/lock.html):

    coordinator = coordination.get_coordinator('zake://', b'host-1')
    coordinator.start()
    lock = coordinator.get_lock('foobar')
    with lock: ...

one coordinator per client process, started with start(start_heart=True)
(its docs: "start_heart: Start a background thread to run heartbeat() at
the right interval"), one lock per key from get_lock kept across
acquisitions, acquire(blocking=False) to try once, release() to give it
back. What keeps the lock alive is the driver's:

  redis       redis-py's Lock (SET NX PX) with lock_timeout (whole seconds:
              ttl_ms rounded up), reacquired by the coordinator's heartbeat
              thread every half of it;
  zookeeper   kazoo's Lock (an ephemeral znode), alive while the session
              (timeout: ttl_ms rounded up to whole seconds) is;
  postgresql  pg_try_advisory_lock on a connection of the lock's own: no
              lease, it lives as long as that session;
  mysql       GET_LOCK on a connection of the lock's own: the same.

tooz tells the application nothing when a lock is lost (no event): a
heartbeat that fails is only logged.

Credentials: tooz takes them in the URL: Redis a password (no ACL user),
ZooKeeper a digest user:password, PostgreSQL and MariaDB the DSN's.

Run with /usr/bin/python3 (Debian's python3-tooz is installed for it):
  locktorture run --backend tooz-redis --scenario baseline
  locktorture client-check --exec '/usr/bin/python3 clients/python/tooz_lock.py redis'
"""
import math
import os
import sys
import time
import urllib.parse

# tooz imports futurist, which imports eventlet; eventlet's green DNS
# alone takes a second to import, and nothing here resolves a name
# (addresses are 127.0.0.1:port). The harness waits 10s for open.
os.environ.setdefault("EVENTLET_NO_GREENDNS", "yes")

import lt_protocol as lt  # noqa: E402
from tooz import coordination  # noqa: E402

DRIVERS = ("redis", "zookeeper", "postgresql", "mysql")


def name_redis_connections(name):
    """Names every redis-py connection this process makes (CLIENT SETNAME),
    by which the harness's kill-session finds this client's: tooz's redis
    driver passes redis-py no client_name, so its client class is given one
    (as tooz-postgresql's application_name goes through PGAPPNAME)."""
    import redis

    base = redis.StrictRedis

    class Named(base):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("client_name", name)
            super().__init__(*args, **kwargs)

    redis.StrictRedis = redis.Redis = Named


def quote(s):
    return urllib.parse.quote(s, safe="")


class Tooz:
    def __init__(self, driver):
        self.driver = driver
        self.coord = None
        self.lease_s = None
        self.locks = {}  # key -> tooz lock, kept across acquisitions
        self.held = set()

    def url(self, req):
        servers = req.get("servers") or {}
        ttl_s = max(1, math.ceil(req.get("ttl_ms", 1000) / 1000.0))
        if self.driver == "redis":
            addrs = servers.get("redis") or []
            if not addrs:
                raise ValueError("no redis server given (exec.servers: [redis])")
            a = lt.auth_of(req, "redis")
            if a.get("tls"):
                raise ValueError("tooz's redis driver takes no CA file (ssl_ca_certs): run without --tls")
            cred = ":%s@" % quote(a["password"]) if a.get("password") else ""
            self.lease_s = ttl_s
            # lock_timeout: the lock's TTL (whole seconds); timeout: the
            # socket timeout and the membership's, tooz's default for both
            # (30s) shortened to the lease.
            return "redis://%s%s?lock_timeout=%d&timeout=%d" % (cred, addrs[0], ttl_s, ttl_s)
        if self.driver == "zookeeper":
            addrs = servers.get("zookeeper") or []
            if not addrs:
                raise ValueError("no zookeeper server given (exec.servers: [zookeeper])")
            a = lt.auth_of(req, "zookeeper")
            cred = ""
            if a.get("auth"):
                user, _, pw = a["auth"].partition(":")
                cred = "%s:%s@" % (quote(user), quote(pw))
            self.lease_s = ttl_s
            q = "timeout=%d" % ttl_s + "".join("&hosts=%s" % h for h in addrs[1:])
            return "zookeeper://%s%s?%s" % (cred, addrs[0], q)
        if self.driver == "postgresql":
            dsn = servers.get("postgres")
            if not dsn:
                raise ValueError("no postgres server given (exec.servers: [postgres])")
            u = urllib.parse.urlsplit(dsn)
            # tooz passes only host, port, database, user and password to
            # psycopg2: the DSN's application_name (by which the harness
            # finds this client's sessions) goes through libpq's PGAPPNAME.
            app = urllib.parse.parse_qs(u.query).get("application_name")
            if app:
                os.environ["PGAPPNAME"] = app[0]
            return urllib.parse.urlunsplit(("postgresql", u.netloc, u.path, "", ""))
        if self.driver == "mysql":
            dsn = servers.get("mariadb")
            if not dsn:
                raise ValueError("no mariadb server given (exec.servers: [mariadb])")
            u = urllib.parse.urlsplit(dsn)
            return urllib.parse.urlunsplit(("mysql", u.netloc, u.path, "", ""))
        raise ValueError("unknown driver %r (%s)" % (self.driver, ", ".join(DRIVERS)))

    def open(self, req):
        member = ("locktorture-%s" % req.get("process")).encode()
        if self.driver == "redis":
            name_redis_connections("locktorture-p%s" % req.get("process"))
        self.coord = coordination.get_coordinator(self.url(req), member)
        self.coord.start(start_heart=True)
        lt.log("open: process %s, tooz driver %s, lease %ss" % (req.get("process"), self.driver, self.lease_s))
        return {"type": "ok", "abilities": []}

    def lock(self, key):
        l = self.locks.get(key)
        if l is None:
            l = self.locks[key] = self.coord.get_lock(("locktorture-" + key).encode())
        return l

    def acquire(self, key):
        start = time.monotonic()
        if not self.lock(key).acquire(blocking=False):
            return {"type": "fail", "error": "busy"}
        self.held.add(key)
        reply = {"type": "ok"}
        if self.lease_s is not None:
            reply["lease_ms"] = max(int((self.lease_s - (time.monotonic() - start)) * 1000), 0)
        return reply

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
        self.coord.stop()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in DRIVERS:
        sys.exit("usage: tooz_lock.py %s" % "|".join(DRIVERS))
    lt.serve(Tooz(sys.argv[1]))
