#!/usr/bin/env node
'use strict';
// locktorture adapter for the Redis lock the articles teach, on node-redis
// (Debian's node-redis, v4): SET key token NX PX ttl with a random token,
// released by a Lua compare-and-delete, and renewed by a setInterval every
// ttl/3 that runs a compare-and-PEXPIRE script and, when it returns 0 (the
// key is not ours any more) or fails, stops and gives the lock up ("bails
// out"): the lost event. It announces "abilities":["extend"] and reports
// every renewal (docs/client-protocol.md, "Leases that renew themselves").
//
// Options (the open request's options, from backend_options: {exec: ...},
// or the environment): renew: false (LOCKTORTURE_RENEW=0) takes the lock
// without the renewal, a fixed lease.
//
// Every Redis call is bounded below timeout_ms with no retries; a call
// that runs out of time drops the connection (its reply is in doubt: the
// next reply read on it could be that one's) and the next call dials
// again. A timeout or a lost connection is info, never fail.
//
//   locktorture client-check --exec 'clients/node/run.sh redis-lock.js'
//   locktorture run --scenario baseline --exec 'clients/node/run.sh redis-lock.js'
const crypto = require('crypto');
const lt = require('./protocol');

const { createClient } = lt.need('redis', 'node-redis');

const RELEASE = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end';
const EXTEND = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end';

class RedisLock {
  constructor() {
    this.client = null; // the connection, made when a call needs it
    this.dialing = null;
    this.ttlMs = 1000;
    this.bound = 300; // each Redis call's limit: 60% of timeout_ms
    this.renew = true;
    this.held = new Map(); // key -> {token, timer, renewing}
  }

  async open(req) {
    const addrs = (req.servers || {}).redis || [];
    if (addrs.length === 0) {
      throw new Error('no redis server given');
    }
    this.addr = addrs[0];
    this.process = req.process;
    this.auth = lt.authOf(req, 'redis', 0);
    this.ttlMs = Number(req.ttl_ms) || 1000;
    this.bound = (Number(req.timeout_ms) || 500) * 0.6;
    const opt = req.options || {};
    if (opt.renew !== undefined) {
      this.renew = opt.renew !== false && opt.renew !== 'false';
    } else if (process.env.LOCKTORTURE_RENEW !== undefined) {
      this.renew = !['0', 'false', ''].includes(process.env.LOCKTORTURE_RENEW);
    }
    await this.cmd('PING', (c) => c.ping(), 8000);
    lt.log(`open: process ${req.process}, redis ${this.addr}, ttl ${this.ttlMs}ms, call bound ${Math.round(this.bound)}ms, renew ${this.renew}`);
    return { type: 'ok', abilities: this.renew ? ['extend'] : [] };
  }

  /** dial makes a connection, with the run's credentials. */
  dial(ms) {
    const { host, port } = lt.hostPort(this.addr);
    const socket = { host: host, port: port, connectTimeout: Math.max(50, Math.round(ms)), reconnectStrategy: (n) => Math.min(50 * n, 500) };
    const t = this.auth.tls;
    if (t) {
      const fs = require('fs');
      Object.assign(socket, { tls: true, servername: t.server_name || host, rejectUnauthorized: !t.insecure_skip_verify });
      if (t.ca) socket.ca = fs.readFileSync(t.ca);
      if (t.cert) socket.cert = fs.readFileSync(t.cert);
      if (t.key) socket.key = fs.readFileSync(t.key);
    }
    // The name kill-session finds this client's connections by
    // (docs/client-protocol.md): CLIENT SETNAME locktorture-p<N>.
    const c = createClient({ socket: socket, name: `locktorture-p${this.process}`, username: this.auth.username || undefined, password: this.auth.password || undefined, disableOfflineQueue: true });
    c.on('error', (e) => lt.log(`redis: ${e.message}`));
    return c;
  }

  /** drop closes the connection c (a reply on it is in doubt); the next call dials again. */
  drop(c, why) {
    if (c && this.client === c) {
      this.client = null;
      this.dialing = null;
      lt.log(`redis: dropping the connection (${why}); the next call dials again`);
      c.disconnect().catch(() => {});
    }
  }

  /** conn is the connection, dialled within ms when there is none. */
  async conn(ms) {
    if (!this.client) {
      const c = this.dial(ms);
      this.client = c;
      this.dialing = lt.bounded(c.connect(), ms, 'connect').catch((e) => {
        this.drop(c, `connect: ${e.message}`);
        throw e;
      });
    }
    const c = this.client;
    const d = this.dialing;
    if (d) {
      await d;
      if (this.dialing === d) this.dialing = null;
    }
    return c;
  }

  /** cmd runs one Redis call within the bound (ms, else this.bound), dropping the connection when it runs out. */
  async cmd(what, fn, ms) {
    const limit = ms || this.bound;
    const start = Date.now();
    const c = await this.conn(limit);
    return lt.bounded(fn(c), limit - (Date.now() - start), what, () => this.drop(c, `${what} timed out`));
  }

  async acquire(key) {
    if (this.held.has(key)) {
      return { type: 'fail', error: 'busy (held by this client already)' };
    }
    const token = crypto.randomBytes(16).toString('hex');
    const start = Date.now();
    const r = await this.cmd('SET NX', (c) => c.set('lock:' + key, token, { NX: true, PX: this.ttlMs }));
    if (r !== 'OK') {
      return { type: 'fail', error: 'busy' };
    }
    const hold = { token: token, timer: null, renewing: false };
    this.held.set(key, hold);
    if (this.renew) {
      hold.timer = setInterval(() => this.extend(key, hold), Math.max(1, Math.floor(this.ttlMs / 3)));
    }
    return { type: 'ok', lease_ms: Math.max(0, this.ttlMs - (Date.now() - start)) };
  }

  /** stop ends hold's renewal and forgets it. */
  stop(key, hold) {
    clearInterval(hold.timer);
    if (this.held.get(key) === hold) {
      this.held.delete(key);
    }
  }

  /** extend is one renewal of hold: compare-and-PEXPIRE; on 0 or an error it bails out (lost). */
  async extend(key, hold) {
    if (hold.renewing || this.held.get(key) !== hold) {
      return; // one renewal at a time
    }
    hold.renewing = true;
    lt.extendInvoke(key);
    const start = Date.now();
    let n;
    try {
      n = await this.cmd('PEXPIRE', (c) => c.eval(EXTEND, { keys: ['lock:' + key], arguments: [hold.token, String(this.ttlMs)] }));
    } catch (e) {
      lt.extendDone(key, 'info', { error: e.message });
      this.bail(key, hold, `renewal failed: ${e.message}`);
      return;
    } finally {
      hold.renewing = false;
    }
    if (n === 1) {
      lt.extendDone(key, 'ok', { lease_ms: Math.max(0, this.ttlMs - (Date.now() - start)) });
      return;
    }
    lt.extendDone(key, 'fail', { error: 'not held: the key is no longer ours' });
    this.bail(key, hold, 'the key is no longer ours');
  }

  /** bail gives hold up: the renewal stops, and the harness is told (once, and only while it is still held). */
  bail(key, hold, why) {
    if (this.held.get(key) !== hold) {
      return; // released meanwhile: nothing to give up
    }
    this.stop(key, hold);
    lt.log(`${key}: ${why}: lock given up`);
    lt.lost(key);
  }

  async release(key) {
    const hold = this.held.get(key);
    if (!hold) {
      return { type: 'fail', error: 'not held' };
    }
    this.stop(key, hold);
    const n = await this.cmd('release', (c) => c.eval(RELEASE, { keys: ['lock:' + key], arguments: [hold.token] }));
    return n === 1 ? { type: 'ok' } : { type: 'fail', error: 'not held' };
  }

  async giveBack(key) {
    await this.release(key);
  }

  abandoned() {
    this.drop(this.client, 'a call ran past 80% of timeout_ms');
  }

  async close() {
    for (const [key, hold] of this.held) {
      this.stop(key, hold);
    }
    const c = this.client;
    this.client = null;
    if (c) {
      await c.quit().catch(() => c.disconnect());
    }
  }
}

lt.serve(new RedisLock());
