#!/usr/bin/env node
'use strict';
// locktorture adapter for a PostgreSQL advisory lock on node-postgres
// (Debian's node-pg): the servers object's "postgres" DSN
// (docs/client-protocol.md). Two ways, as the articles teach them:
//
//   - session (the default): one connection; acquire is
//     pg_try_advisory_lock(hashtextextended(key, 0)), release
//     pg_advisory_unlock. The lock lasts while the session does: when the
//     connection ends (the server ended it, or the adapter dropped it, see
//     below) every lock it held is gone, and each is a lost event.
//   - xact (`pg-lock.js xact`, options {xact: true} or
//     LOCKTORTURE_PG_XACT=1): a connection per hold, in a transaction
//     from acquire to release: BEGIN, pg_try_advisory_xact_lock, and
//     COMMIT at release. A connection that ends under the hold is a lost
//     event.
//
// Neither has a lease: the replies carry no lease_ms.
//
// Every call is bounded below timeout_ms with no retries; a call that runs
// out of time drops its connection (a reply on it is in doubt) — its locks
// with it (lost) — and the next call connects again. A timeout or a lost
// connection is info, never fail.
//
//   locktorture client-check --exec 'clients/node/run.sh pg-lock.js' --servers postgres
const lt = require('./protocol');

const { Client } = lt.need('pg', 'node-pg');

class PgLock {
  constructor(xact) {
    this.xact = xact;
    this.dsn = '';
    this.bound = 300; // each call's limit: 60% of timeout_ms
    this.client = null; // session mode: the session's connection
    this.dialing = null;
    this.held = new Map(); // key -> the connection it is held on
  }

  async open(req) {
    this.dsn = (req.servers || {}).postgres;
    if (!this.dsn) {
      throw new Error('no postgres server given');
    }
    this.bound = (Number(req.timeout_ms) || 500) * 0.6;
    const opt = req.options || {};
    if (opt.xact !== undefined) {
      this.xact = opt.xact === true || opt.xact === 'true';
    }
    const c = await this.dial(8000);
    if (this.xact) {
      this.kill(c, 'open done', false);
    } else {
      this.session(c);
    }
    lt.log(`open: process ${req.process}, postgres ${this.dsn.replace(/:[^:@/]*@/, ':***@')}, ${this.xact ? 'transaction' : 'session'} locks, call bound ${Math.round(this.bound)}ms`);
    return { type: 'ok', abilities: [] };
  }

  /** dial connects within ms. */
  async dial(ms) {
    const c = new Client({ connectionString: this.dsn, connectionTimeoutMillis: Math.max(50, Math.round(ms)) });
    c.on('error', (e) => lt.log(`postgres: ${e.message}`));
    await lt.bounded(c.connect(), ms, 'connect', () => this.kill(c, 'connect timed out', false));
    return c;
  }

  /** kill ends connection c at once (a hung query must not hold it). */
  kill(c, why, say) {
    if (say !== false) {
      lt.log(`postgres: dropping a connection (${why}); the next call connects again`);
    }
    try {
      c.connection.stream.destroy();
    } catch (e) {
      // already gone
    }
  }

  /** session makes c the session's connection: when it ends, so do its locks. */
  session(c) {
    this.client = c;
    c.once('end', () => {
      if (this.client === c) {
        this.client = null;
      }
      this.gone(c, 'the session ended');
    });
  }

  /** gone: every lock held on connection c is lost. */
  gone(c, why) {
    for (const [key, hc] of this.held) {
      if (hc === c) {
        this.held.delete(key);
        lt.log(`${key}: ${why}: the lock went with it`);
        lt.lost(key);
      }
    }
  }

  /** conn is the session's connection, made within ms when there is none. */
  async conn(ms) {
    if (!this.client) {
      if (!this.dialing) {
        this.dialing = this.dial(ms).then(
          (c) => {
            this.dialing = null;
            this.session(c);
            return c;
          },
          (e) => {
            this.dialing = null;
            throw e;
          }
        );
      }
      return this.dialing;
    }
    return this.client;
  }

  /** query runs one statement on c within the time left before deadline, dropping c when it runs out. */
  query(c, deadline, text, values) {
    return lt.bounded(c.query(text, values), deadline - Date.now(), text.split('(')[0], () => this.kill(c, `${text.split('(')[0]} timed out`));
  }

  async acquire(key) {
    if (this.held.has(key)) {
      return { type: 'fail', error: 'busy (held by this client already)' };
    }
    const deadline = Date.now() + this.bound;
    if (!this.xact) {
      const c = await this.conn(this.bound);
      const r = await this.query(c, deadline, 'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok', [key]);
      if (!r.rows[0].ok) {
        return { type: 'fail', error: 'busy' };
      }
      if (this.client !== c) {
        return { type: 'info', error: 'granted, but the session ended at once' };
      }
      this.held.set(key, c);
      return { type: 'ok' };
    }
    const c = await this.dial(deadline - Date.now());
    try {
      await this.query(c, deadline, 'BEGIN');
      const r = await this.query(c, deadline, 'SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS ok', [key]);
      if (!r.rows[0].ok) {
        this.kill(c, 'busy', false); // ends the transaction: nothing held
        return { type: 'fail', error: 'busy' };
      }
    } catch (e) {
      this.kill(c, e.message, false);
      throw e;
    }
    this.held.set(key, c);
    c.once('end', () => this.gone(c, 'its connection ended'));
    return { type: 'ok' };
  }

  async release(key) {
    const c = this.held.get(key);
    if (!c) {
      return { type: 'fail', error: 'not held' };
    }
    this.held.delete(key);
    const deadline = Date.now() + this.bound;
    if (!this.xact) {
      const r = await this.query(c, deadline, 'SELECT pg_advisory_unlock(hashtextextended($1, 0)) AS ok', [key]);
      return r.rows[0].ok ? { type: 'ok' } : { type: 'fail', error: 'not held' };
    }
    try {
      await this.query(c, deadline, 'COMMIT');
    } finally {
      this.kill(c, 'released', false);
    }
    return { type: 'ok' };
  }

  async giveBack(key) {
    await this.release(key);
  }

  async close() {
    const cs = new Set(this.held.values());
    if (this.client) {
      cs.add(this.client);
    }
    this.held.clear();
    for (const c of cs) {
      this.kill(c, 'close', false);
    }
  }
}

const xact = process.argv[2] === 'xact' || ['1', 'true'].includes(process.env.LOCKTORTURE_PG_XACT || '');
lt.serve(new PgLock(xact));
