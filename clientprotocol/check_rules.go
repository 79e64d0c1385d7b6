// client-check's rule script: the protocol's rules, in the order Check
// puts an adapter through them (run), each judged and recorded as one
// finding (kept, broke, badLine).

package clientprotocol

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/internal/words"
)

// conformance is one run of Check.
type conformance struct {
	ctx      context.Context
	opt      CheckOptions
	dir      string
	cl       *cluster.Cluster
	rep      *CheckReport
	prefix   string // of the keys, so a server someone reuses does not matter
	adapters []*adapter
	done     chan struct{} // closed when Check returns: readers stop
	// sawLateGrant is set when client 0 answered ok after timeout_ms: the
	// late-grant rule was put to the test.
	sawLateGrant bool
	// slowSeen says what came back to each acquire made while client 0's
	// link was slow or cut ("delayed by 1.5s: info after 300ms"), for the
	// late-grant line when no grant came late: what the check saw.
	slowSeen []string
	// tag is the ownerEnv value of the check's copies (and of what they
	// start): "owner/check-N".
	tag string
	// tallies count the breaks of the rules one line at a time can break
	// (lines, ids), by rule: each is said once, with how many.
	tallies map[string]*tally
}

// tally is how often the copies broke one rule, a line at a time.
type tally struct {
	at    int            // its finding, in the report
	who   []string       // the copies that broke it, in the order they first did
	n     map[string]int // breaks by copy
	first string         // what the first break was
}

func (k *conformance) key(s string) string { return k.prefix + s }

// kept and broke record a finding, once: one said already is not
// repeated, and a rule broken again is said on its first line (each rule
// broken is one line).
func (k *conformance) kept(rule, format string, args ...any) {
	k.add(Finding{Rule: rule, Says: fmt.Sprintf(format, args...)})
}

func (k *conformance) broke(rule, format string, args ...any) {
	k.add(Finding{Rule: rule, Broken: true, Says: fmt.Sprintf(format, args...)})
}

func (k *conformance) add(f Finding) {
	if slices.Contains(k.rep.Findings, f) {
		return
	}
	if f.Broken {
		for i := range k.rep.Findings {
			if g := &k.rep.Findings[i]; g.Broken && g.Rule == f.Rule {
				if !strings.Contains(g.Says, f.Says) {
					g.Says += "; also, " + f.Says
				}
				return
			}
		}
	}
	k.rep.Findings = append(k.rep.Findings, f)
}

// badLine records that copy a broke rule (lines: a line that is not a
// message of the protocol; ids: a reply to no request) with one line, what
// saying how. The rule is one finding, however many lines broke it: the
// first, and how many (see tally).
func (k *conformance) badLine(a *adapter, rule, what string) {
	t := k.tallies[rule]
	if t == nil {
		t = &tally{at: len(k.rep.Findings), n: map[string]int{}, first: what}
		k.tallies[rule] = t
		k.rep.Findings = append(k.rep.Findings, Finding{Rule: rule, Broken: true})
	}
	if t.n[a.name] == 0 {
		t.who = append(t.who, a.name)
	}
	t.n[a.name]++
	k.rep.Findings[t.at].Says = t.says(rule)
}

// says writes a tally in plain words: the first break and, when there
// were more, how many, by copy.
func (t *tally) says(rule string) string {
	total := 0
	counts := make([]string, len(t.who))
	for i, w := range t.who {
		total += t.n[w]
		counts[i] = strconv.Itoa(t.n[w])
	}
	who := joinAnd(t.who)
	switch {
	case rule == "lines" && total == 1:
		return fmt.Sprintf("%s wrote a line that is not a message of the protocol: %s", who, t.first)
	case rule == "lines" && len(t.who) == 1:
		return fmt.Sprintf("%s wrote %d lines that are not messages of the protocol; the first: %s", who, total, t.first)
	case rule == "lines":
		return fmt.Sprintf("%s wrote %d lines that are not messages of the protocol (%s); the first, %s's: %s", who, total, joinAnd(counts), t.who[0], t.first)
	case total == 1:
		return fmt.Sprintf("%s %s", who, t.first)
	case len(t.who) == 1:
		return fmt.Sprintf("%s broke it %d times; the first time, it %s", who, total, t.first)
	}
	return fmt.Sprintf("%s broke it %d times (%s); the first time, %s %s", who, total, joinAnd(counts), t.who[0], t.first)
}

// open opens copy p; false when it did not (recorded).
func (k *conformance) open(a *adapter) bool {
	given := k.cl.ClientServers(a.p)
	req := OpenRequest{Op: OpOpen, Process: a.p, TTLMS: k.opt.TTL.Milliseconds(), TimeoutMS: k.opt.Timeout.Milliseconds(),
		Servers: given, Options: orEmpty(k.opt.Options)}
	if len(given.Auth) > 0 {
		// The run's password (and TLS files, copied 0600 into the
		// cluster's private directory, removed with it).
		auth, err := given.Auth.WriteTLSFiles(k.cl.TempDir())
		if err != nil {
			k.broke("open", "the harness could not write the TLS files: %v", err)
			return false
		}
		req.Auth = auth
	}
	_, _, r := k.call(a, func(id int64) any { req.ID = id; return req }, openRule)
	switch {
	case !r.ok && r.why != "":
		k.broke("open", "%s did not answer open: %s", a.name, r.why)
		return false
	case !r.ok:
		why := "no reply to open within " + openRule.String()
		select {
		case <-a.exited:
			why = "it exited before answering open" + a.stderrEnded()
		default:
		}
		k.broke("open", "%s: %s", a.name, why)
		return false
	case r.m.Type != TypeOK:
		k.broke("open", "%s answered open with %s: it must answer ok once connected%s", a.name, describe(r), loginHint(r))
		return false
	}
	k.kept("open", "%s answered open ok after %s", a.name, r.after.Round(time.Millisecond))
	return true
}

// acquire is an acquire waited for timeout_ms (a reply after it is what
// the harness would drop).
func (k *conformance) acquire(a *adapter, key string) (int64, time.Time, reply) {
	return k.call(a, withID(map[string]any{"op": OpAcquire, "key": key}), k.opt.Timeout)
}

// patient makes a request with no fault on the way and waits for its reply
// up to timeout_ms plus slack: it is judged by what it says, not by a
// busy machine's delay.
func (k *conformance) patient(a *adapter, op, key string) reply {
	_, _, r := k.call(a, withID(map[string]any{"op": op, "key": key}), k.opt.Timeout+slack)
	return r
}

// slack is how much longer than timeout_ms the check waits for a reply it
// judges by its content, and for a program to exit.
const slack = 3 * time.Second

// settle waits for the late replies of ids, each up to d after it was
// sent, and returns them by id: what the harness would have dropped.
func (k *conformance) settle(a *adapter, ids map[int64]time.Time, d time.Duration) map[int64]reply {
	out := map[int64]reply{}
	for id, sent := range ids {
		out[id] = k.wait(a, id, sent, max(0, time.Until(sent.Add(d))))
	}
	return out
}

// patience is how long after a request on a slowed or cut link the check
// waits for its reply: past what a run allows (timeout_ms and the grace),
// so that a reply that comes later still is said to be late, and by how
// much, rather than missing.
func (k *conformance) patience() time.Duration {
	return max(k.allowed()+slack, 10*time.Second)
}

// allowed is how long after a request a run waits for its reply before it
// stops with "stopped answering": timeout_ms plus the grace.
func (k *conformance) allowed() time.Duration {
	return k.opt.Timeout + defaultReplyGrace(k.opt.Timeout)
}

func (k *conformance) run() {
	to := k.opt.Timeout
	k.opt.Progress("starting two copies of the adapter")
	a, err := k.start(0)
	if err != nil {
		k.broke("start", "%v", err)
		return
	}
	b, err := k.start(1)
	if err != nil {
		k.broke("start", "%v", err)
		return
	}
	if !k.open(a) || !k.open(b) {
		return
	}

	if k.ctx.Err() != nil {
		return // interrupted: the caller says so
	}
	k.opt.Progress("acquire and release")
	k0 := k.key("k0")
	if r := k.patient(a, OpAcquire, k0); !r.ok || r.m.Type != TypeOK {
		k.broke("acquire", "client 0's acquire of a free key got %s: want ok%s", describe(r), loginHint(r))
		return
	}
	k.kept("acquire", "an acquire of a free key was answered ok")
	switch r := k.patient(b, OpAcquire, k0); {
	case r.ok && r.m.Type == TypeOK:
		k.broke("busy", "client 1 was granted %s while client 0 held it: a double grant with no fault at all", k0)
		k.patient(b, OpRelease, k0)
	case r.ok && r.m.Type == TypeFail:
		k.kept("busy", "an acquire of a key another client holds was answered fail (%q)", r.m.Error)
	default:
		k.broke("busy", "client 1's acquire of a key client 0 holds got %s: want fail \"busy\" (try once, do not wait for the lock)", describe(r))
	}
	if r := k.patient(a, OpRelease, k0); !r.ok || r.m.Type != TypeOK {
		k.broke("release", "client 0's release of the key it held got %s: want ok", describe(r))
	} else {
		k.kept("release", "a release of a held key was answered ok")
	}
	switch r := k.patient(a, OpRelease, k0); {
	case r.ok && r.m.Type == TypeFail:
		k.kept("not held", "a release of a key not held was answered fail (%q)", r.m.Error)
	default:
		k.broke("not held", "client 0's release of a key it no longer held got %s: want fail \"not held\"", describe(r))
	}
	if r := k.patient(b, OpAcquire, k0); r.ok && r.m.Type == TypeOK {
		k.patient(b, OpRelease, k0)
	} else {
		k.broke("release", "after client 0 released %s, client 1's acquire got %s: the release did not free the lock", k0, describe(r))
	}

	// A server slow past timeout_ms, and the next request sent at once:
	// it queues behind the slow one. Both replies come late; a late ok is
	// a grant the harness dropped, which the adapter must give back.
	if k.ctx.Err() != nil {
		return // interrupted: the caller says so
	}
	k.opt.Progress("a reply slower than timeout_ms, then the next request")
	slow := 3 * to
	heal := k.fault(0, func(l *links.Link) (string, error) {
		return l.Delay(context.Background(), links.Downstream, slow.Milliseconds(), 0)
	})
	k1, k2 := k.key("k1"), k.key("k2")
	id1, sent1, r1 := k.acquire(a, k1)
	id2, sent2, r2 := k.acquire(a, k2)
	pending := map[int64]time.Time{}
	if !r1.ok {
		pending[id1] = sent1
	}
	if !r2.ok {
		pending[id2] = sent2
	}
	lateAll := k.settle(a, pending, k.patience())
	heal()
	if !r1.ok {
		r1 = lateAll[id1]
	}
	if !r2.ok {
		r2 = lateAll[id2]
	}
	k.judgeSlow(a, b, "delayed by "+slow.String(), []slowReq{{k1, r1}, {k2, r2}})

	// A link cut: requests get no answer from the server; then healed,
	// the adapter must work again.
	if k.ctx.Err() != nil {
		return // interrupted: the caller says so
	}
	k.opt.Progress("a cut link, then healed")
	heal = k.fault(0, func(l *links.Link) (string, error) { return l.Cut(context.Background(), links.BothWays) })
	k3 := k.key("k3")
	id3, sent3, r3 := k.acquire(a, k3)
	if !r3.ok {
		r3 = k.settle(a, map[int64]time.Time{id3: sent3}, k.patience())[id3]
	}
	heal()
	k.judgeSlow(a, b, "cut", []slowReq{{k3, r3}})
	k.reconnect(a)

	if !k.sawLateGrant {
		k.kept("late grant", "not put to the test: no ok came after timeout_ms (%s) within the %s the check waited for each answer, so there was no late grant to give back — client 0's acquires on its slowed and cut link got: %s", k.opt.Timeout, k.patience(), strings.Join(k.slowSeen, "; "))
	}

	// close: answered ok, then the program exits.
	if k.ctx.Err() != nil {
		return // interrupted: the caller says so
	}
	k.opt.Progress("close")
	_, _, rc := k.call(a, withID(map[string]any{"op": OpClose}), slack)
	if !rc.ok || rc.m.Type != TypeOK {
		k.broke("close", "client 0 was sent close and gave %s within %s: answer ok, then exit", describe(rc), slack)
	} else {
		k.kept("close", "close was answered ok")
	}
	if !k.exitsWithin(a, slack) {
		k.broke("exit after close", "client 0 was still running %s after close: exit once you have answered it", slack)
	} else if rc.ok {
		k.kept("exit after close", "client 0 exited after close")
	}

	// stdin closed with no close request: the harness is gone.
	if k.ctx.Err() != nil {
		return // interrupted: the caller says so
	}
	k.opt.Progress("stdin closed")
	_ = b.stdin.Close()
	if !k.exitsWithin(b, slack) {
		k.broke("stdin closed", "client 1 was still running %s after its stdin closed: when stdin ends, exit (the harness is gone)", slack)
	} else {
		k.kept("stdin closed", "client 1 exited when its stdin closed")
	}
}

// reconnectWithin is how long client-check gives an adapter whose link was
// healed to acquire again: a client library's reconnect backs off, and a
// JVM's or an interpreter's on a loaded machine takes seconds.
const reconnectWithin = 15 * time.Second

// reconnect checks that client a, its cut link healed, acquires again
// (trying for up to reconnectWithin).
func (k *conformance) reconnect(a *adapter) {
	k4 := k.key("k4")
	var last reply
	healed := time.Now()
	for tries := 0; tries < 5 || time.Since(healed) < reconnectWithin; tries++ {
		if k.ctx.Err() != nil {
			return // interrupted: the caller says so
		}
		var id int64
		var sent time.Time
		id, sent, last = k.acquire(a, k4)
		if !last.ok {
			last = k.settle(a, map[int64]time.Time{id: sent}, time.Second)[id]
			last.ok = false
		}
		if last.ok && last.m.Type == TypeOK {
			break
		}
		k.pause(200 * time.Millisecond)
	}
	if last.ok && last.m.Type == TypeOK {
		k.kept("reconnect", "after its link was cut and healed, client 0 acquired again (%s after the heal)", time.Since(healed).Round(time.Millisecond))
		k.patient(a, OpRelease, k4)
	} else {
		k.broke("reconnect", "after its link was cut and healed, client 0's acquires still got %s %s after the heal: an adapter must reconnect (or its client library must)", describe(last), reconnectWithin)
	}
}

// slowReq is one acquire made while the link was slow or cut, and what
// came back (at any time).
type slowReq struct {
	key string
	r   reply
}

// judgeSlow judges the acquires made while client a's link was slow or
// cut, one line per rule (see answeredAll for the last): a fail is wrong
// (the outcome is unknown: info); a late ok is a grant the harness
// dropped, and must have been given back, which client b checks by
// acquiring the key.
func (k *conformance) judgeSlow(a, b *adapter, how string, reqs []slowReq) {
	to := k.opt.Timeout
	var failed, unknown []reply
	var givenBack, kept, client1 []string
	for _, q := range reqs {
		r := q.r
		k.slowSeen = append(k.slowSeen, how+": "+describe(r))
		switch {
		case !r.ok:
		case r.m.Type == TypeFail:
			failed = append(failed, r)
		case r.m.Type == TypeOK && r.after > to:
			// A late grant: the harness recorded info and dropped it. It
			// never releases a timed-out acquire: the adapter must.
			k.sawLateGrant = true
			late := (r.after - to).Round(time.Millisecond).String()
			k.pause(500 * time.Millisecond)
			if rb := k.patient(b, OpAcquire, q.key); rb.ok && rb.m.Type == TypeOK {
				givenBack = append(givenBack, late)
				k.patient(b, OpRelease, q.key)
			} else {
				kept = append(kept, late)
				got := describe(rb)
				if rb.ok {
					got = answer(rb)
				}
				if !slices.Contains(client1, got) {
					client1 = append(client1, got)
				}
			}
		default:
			unknown = append(unknown, r)
		}
	}
	if len(failed) > 0 {
		k.broke("timeout is info", "client 0 answered %s to %s its server could not answer within timeout_ms (%s; the link was %s): an outcome nobody knows is info, never fail — the server may have granted it",
			describeAll(failed), acquires(len(failed)), to, how)
	}
	if len(unknown) > 0 {
		k.kept("timeout is info", "%s made while the link was %s got %s", acquires(len(unknown)), how, describeAll(unknown))
	}
	if len(givenBack) > 0 {
		k.kept("late grant", "client 0's %s came %s after timeout_ms and %s given back (client 1 could take the key)", words.Noun(len(givenBack), "grant", words.Count(len(givenBack), "grant", "grants")), joinAnd(givenBack), words.Noun(len(givenBack), "was", "were"))
	}
	if len(kept) > 0 {
		k.broke("late grant", "client 0 answered ok %s after timeout_ms (%s, the link was %s): the harness had given up and recorded info, and never releases it — but the adapter kept the lock%s (client 1 then got %s). Give a grant that comes too late back at once",
			joinAnd(kept), to, how, times(len(kept)), joinAnd(client1))
	}
	k.answeredAll(how, reqs)
}

// answeredAll judges whether client 0 answered every acquire made while
// its link was slow or cut in the time a run allows, in one line: those
// it never answered, and those it answered late, and by how much.
func (k *conformance) answeredAll(how string, reqs []slowReq) {
	var late []string
	never := 0
	for _, q := range reqs {
		switch {
		case !q.r.ok:
			never++
		case q.r.after > k.allowed():
			late = append(late, fmt.Sprintf("%.1fs", q.r.after.Seconds()))
		}
	}
	was := "it was"
	if len(late) > 1 {
		was = "they were"
	}
	var says []string
	if never > 0 {
		says = append(says, fmt.Sprintf("never answered %s made while its link was %s (waited %s after each was sent)", acquires(never), how, k.patience()))
	}
	if len(late) > 0 {
		says = append(says, fmt.Sprintf("answered %s made while its link was %s late: %s after %s sent (timeout_ms: %s)", acquires(len(late)), how, joinAnd(late), was, k.opt.Timeout))
	}
	if len(says) == 0 {
		k.kept("answer every request", "client 0 answered every acquire made while its link was %s within timeout_ms and the grace a run allows (%s)", how, k.allowed())
		return
	}
	k.broke("answer every request", "client 0 %s. A run waits timeout_ms plus a grace (%s in all here), then stops: \"client 0 stopped answering\" (exit 255). Answer every request, in order, within timeout_ms: info when you do not know",
		strings.Join(says, "; it "), k.allowed())
}
