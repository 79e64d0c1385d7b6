'use strict';
// The client protocol's loop (docs/client-protocol.md), shared by the
// Node.js adapters beside it (redis-lock.js, pg-lock.js). It imports only
// Node's own modules.
//
// An adapter is an object with async open(req), acquire(key),
// release(key), giveBack(key) and close(); serve(adapter) speaks the
// protocol for it:
//
//   - requests are read as they come and stamped when they arrive (the
//     harness's timeout started when it wrote them);
//   - the adapter's calls run one at a time; a request whose call has not
//     settled by 80% of timeout_ms is answered info (nobody knows whether
//     it happened) and the adapter's abandoned(op, key), when it has one,
//     is told (a connection with a command whose reply is in doubt can be
//     dropped there); if that call later grants the lock, giveBack(key)
//     gives it back at once (the harness recorded info and will never
//     release it); a request still waiting behind such a call when its own
//     80% is up is answered info and never made;
//   - a call that throws is info (the request may have happened), never
//     fail; fail is for what the adapter knows did not happen (it returns
//     {type: 'fail', error: 'busy'});
//   - close is answered ok, then the adapter's close() (bounded) and exit;
//     so does the end of stdin.
//
// Unasked events, from anywhere in the adapter: extendInvoke(key) when a
// renewal starts, extendDone(key, type, fields) when it ends (ok with
// lease_ms, fail, or info with error: every invoke gets one, however
// late), lost(key) when the adapter knows the lock is gone.

const readline = require('readline');

/** send writes one JSON line to stdout (the harness). */
function send(msg) {
  process.stdout.write(JSON.stringify(msg) + '\n');
}

/** log writes a line to stderr (client-N.log in the run's store). */
function log(...args) {
  process.stderr.write(args.map((a) => (typeof a === 'string' ? a : String(a))).join(' ') + '\n');
}

/** extendInvoke reports that a renewal of key starts. */
function extendInvoke(key) {
  send({ event: 'extend', key: key, phase: 'invoke' });
}

/**
 * extendDone reports how the renewal of key begun last ended: type is ok
 * (fields.lease_ms: the lease it gave), fail (it certainly did not
 * renew) or info (unknown); fields.error says why.
 */
function extendDone(key, type, fields) {
  send(Object.assign({ event: 'extend', key: key, type: type }, fields || {}));
}

/** lost tells the harness the lock on key is gone. */
function lost(key) {
  send({ event: 'lost', key: key });
}

/**
 * authOf is the open request's auth for servers of kind (one object for
 * every server, or a list in the order of its addresses), or {}.
 */
function authOf(req, kind, i) {
  let a = (req.auth || {})[kind];
  if (Array.isArray(a)) {
    a = a[i || 0];
  }
  return a || {};
}

/** hostPort splits a host:port address. */
function hostPort(addr) {
  const i = addr.lastIndexOf(':');
  return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
}

/**
 * need requires a library module, or, when it is not installed, says so
 * in one line on stderr (naming the Debian package) and exits 69
 * (EX_UNAVAILABLE), as the harness's launchers do.
 */
function need(module, debian) {
  try {
    return require(module);
  } catch (e) {
    if (e && e.code === 'MODULE_NOT_FOUND' && String(e.message).includes("'" + module + "'")) {
      const me = require('path').basename(process.argv[1] || 'node');
      log(`${me}: no module ${module} (Debian's ${debian}) on NODE_PATH: make deps installs it (beside a node apt cannot install it for, it unpacks it into a cache clients/node/run.sh reads)`);
      process.exit(69);
    }
    throw e;
  }
}

/** TimeoutError is a call that did not settle in time. */
class TimeoutError extends Error {}

/**
 * bounded settles as promise does, or rejects with a TimeoutError after ms
 * (onTimeout, when given, is called then: drop the connection there).
 */
function bounded(promise, ms, what, onTimeout) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => {
      if (onTimeout) {
        onTimeout();
      }
      reject(new TimeoutError(`${what}: no answer within ${Math.round(ms)}ms`));
    }, Math.max(0, ms));
  });
  return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

function errText(e) {
  return (e && e.message) || String(e);
}

function call(adapter, req) {
  switch (req.op) {
    case 'open':
      return adapter.open(req);
    case 'acquire':
      return adapter.acquire(req.key);
    case 'release':
      return adapter.release(req.key);
  }
  return Promise.resolve({ type: 'fail', error: `unknown op ${JSON.stringify(req.op)}` });
}

let exiting = false;

/** exit closes the adapter (bounded: a library waiting on a cut link must not keep the process) and exits. */
async function exit(adapter) {
  if (exiting) {
    return;
  }
  exiting = true;
  try {
    await bounded(Promise.resolve().then(() => adapter.close()), 2000, 'close');
  } catch (e) {
    log(`close: ${errText(e)}`);
  }
  process.exit(0);
}

/** serve speaks the protocol for adapter until close or the end of stdin. */
function serve(adapter) {
  const queue = [];
  let wake = null;
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on('line', (line) => {
    line = line.trim();
    if (!line) {
      return;
    }
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      log(`not a JSON line from the harness: ${line.slice(0, 200)}`);
      return;
    }
    queue.push({ arrived: Date.now(), req: req });
    if (wake) {
      wake();
    }
  });
  rl.on('close', () => {
    queue.push({ arrived: Date.now(), req: null });
    if (wake) {
      wake();
    }
  });

  let timeoutMs = 500;
  let running = null; // the call last made, until it settles

  (async function loop() {
    for (;;) {
      if (queue.length === 0) {
        await new Promise((resolve) => (wake = resolve));
        wake = null;
        continue;
      }
      const { arrived, req } = queue.shift();
      if (req === null) {
        return exit(adapter); // stdin ended: the harness is gone
      }
      const id = req.id;
      if (req.op === 'close') {
        send({ id: id, type: 'ok' });
        return exit(adapter);
      }
      let bound;
      if (req.op === 'open') {
        timeoutMs = Number(req.timeout_ms) || 500;
        bound = 9000; // the harness waits 10s for open
      } else {
        bound = timeoutMs * 0.8;
      }
      const deadline = arrived + bound;
      if (running) {
        await Promise.race([running, sleep(deadline - Date.now())]);
        if (running) {
          send({ id: id, type: 'info', error: `no answer within ${Math.round(bound)}ms: behind a call the library has not returned from` });
          continue;
        }
      }
      let settled = false;
      let abandoned = false;
      const p = Promise.resolve()
        .then(() => call(adapter, req))
        .catch((e) => {
          // The library threw: the request may have happened (an open
          // that throws certainly did not connect: the run stops, naming it).
          log(`${req.op} ${req.key || ''}: ${errText(e)}`);
          return { type: req.op === 'open' ? 'fail' : 'info', error: errText(e) };
        })
        .then((reply) => {
          settled = true;
          if (abandoned && req.op === 'acquire' && reply && reply.type === 'ok') {
            return Promise.resolve()
              .then(() => adapter.giveBack(req.key))
              .then(
                () => log(`acquire ${req.key}: granted after the harness gave up; given back`),
                (e) => log(`acquire ${req.key}: granted after the harness gave up; giving it back failed: ${errText(e)}`)
              )
              .then(() => reply);
          }
          return reply;
        });
      running = p.then(() => {
        running = null;
      });
      let reply = await Promise.race([p, sleep(deadline - Date.now()).then(() => null)]);
      if (reply === null && !settled) {
        abandoned = true;
        if (adapter.abandoned) {
          try {
            adapter.abandoned(req.op, req.key);
          } catch (e) {
            log(`abandoned: ${errText(e)}`);
          }
        }
        reply = { type: 'info', error: `no answer within ${Math.round(bound)}ms: the library had not returned` };
      } else if (reply === null) {
        reply = await p;
      }
      send(Object.assign({}, reply, { id: id }));
    }
  })().catch((e) => {
    log(`protocol loop: ${(e && e.stack) || e}`);
    process.exit(70);
  });
}

module.exports = { serve, send, log, extendInvoke, extendDone, lost, authOf, hostPort, need, bounded, TimeoutError };
