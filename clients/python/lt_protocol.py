"""The client protocol's loop (docs/client-protocol.md), shared by the
library adapters beside it (kazoo_lock.py, etcd3_lock.py, tooz_lock.py).

An adapter is an object with open(req), acquire(key), release(key),
give_back(key) and close(); serve(adapter) speaks the protocol for it:

  - requests are read by a thread of their own and stamped when they
    arrive (the harness's timeout started when it wrote them);
  - the library's calls run one at a time in a worker thread; a request
    whose call has not returned by 80% of timeout_ms is answered info
    (the library may still be retrying, or waiting on a cut link); if
    that call later grants the lock, the grant is given back at once
    (nobody will ever release it: the harness recorded info); a request
    still queued behind such a call is answered info and never made;
  - an acquire answers {"type": "ok"|"fail"|"info", ...} as the adapter
    says; an exception from the library is info (nobody knows), never
    fail;
  - close is answered ok, then the program exits; so does the end of
    stdin.

lost(key) sends a lost event (the library said the lock is gone) from any
thread.
"""
import json
import os
import queue
import sys
import threading
import time

_out = threading.Lock()


def send(msg):
    line = json.dumps(msg, separators=(",", ":"))
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(*args):
    with _out:
        print(*args, file=sys.stderr, flush=True)


def lost(key):
    """Tells the harness the library said the lock on key is gone."""
    send({"event": "lost", "key": key})


def auth_of(req, kind, i=0):
    """The open request's auth for servers of kind (one object for every
    server, or a list in the order of its addresses), or {}."""
    a = (req.get("auth") or {}).get(kind)
    if isinstance(a, list):
        a = a[i] if i < len(a) else None
    return a or {}


def host_port(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


class _Job:
    def __init__(self, req, arrived):
        self.req = req
        self.arrived = arrived
        self.state = "queued"  # queued, running, done, cancelled
        self.abandoned = False
        self.reply = None
        self.done = threading.Event()


def _call(adapter, req):
    op = req.get("op")
    if op == "open":
        return adapter.open(req)
    if op == "acquire":
        return adapter.acquire(req["key"])
    if op == "release":
        return adapter.release(req["key"])
    return {"type": "fail", "error": "unknown op %r" % op}


def _worker(adapter, jobs, mu):
    while True:
        job = jobs.get()
        with mu:
            if job.state == "cancelled":
                continue
            job.state = "running"
        try:
            reply = _call(adapter, job.req)
        except Exception as e:  # the library raised: the request may have happened
            log("%s %s: %r" % (job.req.get("op"), job.req.get("key", ""), e))
            # open: not connected, certainly (the run stops, naming it).
            reply = {"type": "fail" if job.req.get("op") == "open" else "info", "error": repr(e)}
        with mu:
            job.reply, job.state = reply, "done"
            abandoned = job.abandoned
            job.done.set()
        if abandoned and job.req.get("op") == "acquire" and reply.get("type") == "ok":
            key = job.req["key"]
            try:
                adapter.give_back(key)
                log("acquire %s: granted after the harness gave up; given back" % key)
            except Exception as e:
                log("acquire %s: granted after the harness gave up; giving it back failed: %r" % (key, e))


def _reader(q):
    for line in sys.stdin:
        line = line.strip()
        if line:
            q.put((time.monotonic(), json.loads(line)))
    q.put((time.monotonic(), None))


def _exit(adapter):
    """Closes the library (bounded: a library that waits on a cut link
    must not keep the process) and exits."""
    t = threading.Thread(target=adapter.close, daemon=True)
    t.start()
    t.join(2.0)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def serve(adapter):
    requests = queue.Queue()
    jobs = queue.Queue()
    mu = threading.Lock()
    threading.Thread(target=_reader, args=(requests,), daemon=True).start()
    threading.Thread(target=_worker, args=(adapter, jobs, mu), daemon=True).start()
    timeout_s = 0.5
    while True:
        arrived, req = requests.get()
        if req is None:
            _exit(adapter)
        rid, op = req.get("id"), req.get("op")
        if op == "close":
            send({"id": rid, "type": "ok"})
            _exit(adapter)
        if op == "open":
            timeout_s = req.get("timeout_ms", 500) / 1000.0
            bound = 9.0  # the harness waits 10s for open
        else:
            bound = timeout_s * 0.8
        job = _Job(req, arrived)
        jobs.put(job)
        job.done.wait(max(0.0, arrived + bound - time.monotonic()))
        with mu:
            if job.state == "done":
                reply = job.reply
            else:
                if job.state == "queued":
                    job.state = "cancelled"
                    why = "behind a call the library has not returned from"
                else:
                    job.abandoned = True
                    why = "the library had not returned"
                reply = {"type": "info", "error": "no answer within %dms: %s" % (bound * 1000, why)}
        reply = dict(reply)
        reply["id"] = rid
        send(reply)
