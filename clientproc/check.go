package clientproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/internal/owner"
	"github.com/locktorture/locktorture/internal/secret"
	"github.com/locktorture/locktorture/internal/words"
)

// CheckOptions say which adapter Check drives and against what.
type CheckOptions struct {
	// Command is the adapter and its arguments; Env adds to the
	// environment.
	Command []string
	Env     map[string]string
	// Servers are the kinds of server to start, as exec.servers names
	// them (default: one redis).
	Servers []string
	// Options are sent as the open request's options.
	Options map[string]any
	// TTL and Timeout are the open request's ttl_ms and timeout_ms
	// (defaults 10s and 300ms: a long lease, so that a lock the adapter
	// keeps is still there when the check looks).
	TTL, Timeout time.Duration
	// Dir receives the servers' and the adapter copies' logs (a temporary
	// directory, removed after, when empty).
	Dir string
	// Progress, when set, is told each step as it starts.
	Progress func(step string)
	// TLS starts the servers with TLS (cluster.Options.TLS), as a run's
	// security: tls does: the open request's auth carries the CA and a
	// client certificate.
	TLS bool
}

// Finding is one rule of the protocol, checked: whether the adapter kept
// it, and what happened, in plain words.
type Finding struct {
	Rule   string `json:"rule"`
	Broken bool   `json:"broken"`
	Says   string `json:"says"`
}

// CheckReport is what Check found.
type CheckReport struct {
	Findings []Finding `json:"findings"`
	// Logs are the adapter copies' stderr logs (empty when Dir was not
	// given: they are removed with the temporary directory).
	Logs []string `json:"logs,omitempty"`
}

// Broken returns the findings whose rule the adapter broke.
func (r *CheckReport) Broken() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Broken {
			out = append(out, f)
		}
	}
	return out
}

// ErrCheck is wrapped when the check itself could not run (a server would
// not start, the adapter could not be started at all).
var ErrCheck = errors.New("client-check")

// Check drives an adapter through the corners of the client protocol
// against real servers it starts: open; acquire of a free key (ok) and of
// a held one (fail busy); release (ok) and release of a key not held
// (fail "not held"); a request whose server is slow past timeout_ms,
// followed at once by the next request; a grant that arrives after the
// harness gave up on it (it must be given back); a link cut and healed
// (timeouts are info, never fail; the adapter reconnects); close; and
// stdin closed without close. Two copies run as clients 0 and 1, each
// through its own link to each server. It returns each rule checked and
// whether the adapter kept it; an error only when the check could not run.
// When ctx ends first (Ctrl-C), it returns no report — it never finished
// checking — and an error saying it was interrupted, wrapping ctx's.
//
// What the adapter wrote is shown with every secret masked (the servers'
// password it was given included) and quoted printably (see showLine); its
// stderr log is masked as it is written. Its temporary directories name
// their owner (owner.Mark) and its copies carry the check's tag (ownerEnv),
// so that should the check be killed with SIGKILL, the next run, check or
// compare removes what it left (owner.Reap, ReapOrphans); Check itself
// first ends what clients of harnesses now gone left running.
func Check(ctx context.Context, opt CheckOptions) (*CheckReport, error) {
	if len(opt.Command) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrCheck)
	}
	if opt.TTL <= 0 {
		opt.TTL = 10 * time.Second
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 300 * time.Millisecond
	}
	if opt.Progress == nil {
		opt.Progress = func(string) {}
	}
	for _, p := range ReapOrphans() {
		opt.Progress(fmt.Sprintf("ended %s, left by a client of a harness that is gone", p))
	}
	me, err := owner.ID()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	dir := opt.Dir
	keepLogs := dir != ""
	if dir == "" {
		d, err := MkdirOwned("locktorture-client-check-")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCheck, err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	cl, err := cluster.New(cluster.Options{LogDir: dir, Locked: true, TLS: opt.TLS})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	defer cl.Close()
	cl.EnableLinks()
	opt.Progress("starting servers: " + strings.Join(orDefaultKind(opt.Servers), ", "))
	if err := cl.StartKinds(ctx, opt.Servers, cluster.StartOptions{}); err != nil {
		if ctx.Err() != nil {
			return nil, interrupted(ctx)
		}
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	ck := &conformance{ctx: ctx, opt: opt, dir: dir, cl: cl, rep: &CheckReport{}, done: make(chan struct{}),
		prefix: fmt.Sprintf("lt-check-%d-", time.Now().UnixNano()%1e6),
		tag:    fmt.Sprintf("%s/check-%d", me, launchers.Add(1)), tallies: map[string]*tally{}}
	defer close(ck.done)
	defer ck.killAll()
	ck.run()
	if ctx.Err() != nil {
		// What it found on the way was cut short too (a wait for a reply
		// ended by the interrupt is no "no reply"): no verdict at all.
		return nil, interrupted(ctx)
	}
	if keepLogs {
		for _, a := range ck.adapters {
			ck.rep.Logs = append(ck.rep.Logs, a.logPath)
		}
	}
	return ck.rep, nil
}

// interrupted is Check's error when ctx ended before it finished.
func interrupted(ctx context.Context) error {
	return fmt.Errorf("%w: interrupted before it finished: no verdict on the adapter: %w", ErrCheck, ctx.Err())
}

// MkdirOwned makes a new temporary directory in the system's, named
// pattern as os.MkdirTemp names it, that names this process its owner
// (owner.Mark): should the process be killed with SIGKILL, the next run on
// the machine removes it once the process is gone (owner.Reap; pattern
// must begin with owner.TempPattern, "locktorture-"). The caller removes it.
func MkdirOwned(pattern string) (string, error) {
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := owner.Mark(d); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}

// orDefaultKind is kinds, or the default kind when none is named.
func orDefaultKind(kinds []string) []string {
	if len(kinds) == 0 {
		return []string{cluster.DefaultKind}
	}
	return kinds
}

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

// killAll ends every copy, and anything they started that left their
// process group (found by the check's tag), then waits a little for
// their logs to be written whole.
func (k *conformance) killAll() {
	for _, a := range k.adapters {
		a.kill()
	}
	killAll(procsTagged(func(tag string) bool { return tag == k.tag }))
	for _, a := range k.adapters {
		a.logsWritten(2 * time.Second)
	}
}

// adapter is one running copy of the program under check.
type adapter struct {
	p       int
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logPath string
	lines   chan line // what it writes, as it comes
	// ended is closed when its stdout will give no more lines; endErr,
	// set before, says why when it was not the end of the output (a line
	// over the protocol's limit).
	ended  chan struct{}
	endErr error
	exited chan struct{}
	// logDone is closed when its stderr ended and its log is written
	// whole (and masked: see copyLogLines).
	logDone chan struct{}
	nextID  int64
	// replies that came after the check stopped waiting, by id
	late map[int64]line
}

// line is one line the adapter wrote, when it came, and what it says.
type line struct {
	at  time.Time
	m   Message
	err error // not a message of the protocol
	raw string
}

// start starts copy p and returns it, or records why it could not run.
func (k *conformance) start(p int) (*adapter, error) {
	a := &adapter{p: p, name: fmt.Sprintf("client %d", p), logPath: filepath.Join(k.dir, logName(p)),
		lines: make(chan line, 256), ended: make(chan struct{}), exited: make(chan struct{}), logDone: make(chan struct{}),
		late: map[int64]line{}}
	logf, err := os.Create(a.logPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	cmd := exec.Command(k.opt.Command[0], k.opt.Command[1:]...)
	cmd.Env = os.Environ()
	envKeys := make([]string, 0, len(k.opt.Env))
	for e := range k.opt.Env {
		envKeys = append(envKeys, e)
	}
	sort.Strings(envKeys)
	for _, e := range envKeys {
		cmd.Env = append(cmd.Env, e+"="+k.opt.Env[e])
	}
	cmd.Env = append(cmd.Env, ownerEnv+"="+k.tag)
	// Its stderr through a pipe of our own, masked on the way to its log.
	stderr, errW, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		stderr.Close()
		errW.Close()
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	// A pipe of our own, read to its end whatever Wait does.
	stdout, outW, err := os.Pipe()
	if err != nil {
		logf.Close()
		stderr.Close()
		errW.Close()
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	cmd.Stdout = outW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		logf.Close()
		stdout.Close()
		stderr.Close()
		return nil, fmt.Errorf("%w: start %s: %w", ErrCheck, k.opt.Command[0], err)
	}
	a.cmd, a.stdin = cmd, stdin
	k.adapters = append(k.adapters, a)
	go func() {
		defer close(a.logDone)
		defer stderr.Close()
		copyLogLines(stderr, newCapLog(logf, logCap))
	}()
	go func() {
		defer stdout.Close()
		defer close(a.ended)
		sc := newLineScanner(stdout)
		defer func() { a.endErr = lineErr(sc.Err()) }()
		for sc.Scan() {
			raw := strings.TrimSpace(sc.Text())
			if raw == "" {
				continue
			}
			m, err := parseMessage([]byte(raw))
			select {
			case a.lines <- line{at: time.Now(), m: m, err: err, raw: raw}:
			case <-k.done:
				return
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(a.exited)
	}()
	return a, nil
}

// copyLogLines copies a copy's stderr into its capped log line by line,
// every secret the harness knows masked as it is written, then finishes
// the log (which masks the whole file again, for a secret split by a line
// longer than the reader's buffer).
func copyLogLines(r io.Reader, log *capLog) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			_, _ = log.Write([]byte(secret.Redact(string(line))))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	_ = log.finish()
}

// logsWritten waits up to d for the copy's log to be written whole.
func (a *adapter) logsWritten(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.logDone:
	case <-t.C:
	}
}

// kill ends the copy's whole process group.
func (a *adapter) kill() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	pg := a.cmd.Process.Pid
	_ = syscall.Kill(-pg, syscall.SIGCONT)
	_ = syscall.Kill(-pg, syscall.SIGKILL)
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-a.exited:
	case <-t.C:
	}
}

// send writes one request, req made with the next id, and returns its id.
func (a *adapter) send(req func(id int64) any) (int64, error) {
	id := a.nextID
	a.nextID++
	b, err := json.Marshal(req(id))
	if err != nil {
		return id, err
	}
	_, err = a.stdin.Write(append(b, '\n'))
	return id, err
}

// reply is what came back to one request: the reply (ok is false when
// none came within the wait), how long after the request, and the
// protocol breaks seen on the way.
type reply struct {
	ok    bool
	m     Message
	after time.Duration
	why   string // when there is none, and its output ended: why
}

// wait waits up to d for the reply to id, setting aside events and late
// replies to earlier requests; lines that break the protocol are recorded.
func (k *conformance) wait(a *adapter, id int64, sent time.Time, d time.Duration) reply {
	if l, ok := a.late[id]; ok {
		delete(a.late, id)
		return reply{ok: true, m: l.m, after: l.at.Sub(sent)}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	// take handles one line: true when it is the reply waited for.
	take := func(l line) bool {
		switch {
		case l.err != nil:
			k.badLine(a, "lines", strings.TrimPrefix(l.err.Error(), errProtocol.Error()+": "))
		case l.m.Event != "":
			// extend and lost events are allowed at any time
		case *l.m.ID == id:
			return true
		case *l.m.ID >= a.nextID || *l.m.ID < 0:
			k.badLine(a, "ids", fmt.Sprintf("answered id %d, which no request had", *l.m.ID))
		default:
			a.late[*l.m.ID] = l
		}
		return false
	}
	for {
		select {
		case l := <-a.lines:
			if take(l) {
				return reply{ok: true, m: l.m, after: l.at.Sub(sent)}
			}
		case <-a.ended:
			// No more lines will come: what is left, then no reply.
			for {
				select {
				case l := <-a.lines:
					if take(l) {
						return reply{ok: true, m: l.m, after: l.at.Sub(sent)}
					}
					continue
				default:
				}
				return reply{why: a.silence()}
			}
		case <-t.C:
			return reply{}
		case <-k.ctx.Done():
			return reply{}
		}
	}
}

// silence says why no more lines come from a copy whose output ended:
// a line over the protocol's limit, or its exit (and its stderr's last
// lines).
func (a *adapter) silence() string {
	if a.endErr != nil {
		return strings.TrimPrefix(a.endErr.Error(), errProtocol.Error()+": ")
	}
	why := "its output ended"
	if exitsWithin(a, time.Second) {
		why = "it exited" + a.stderrEnded()
	}
	return why
}

// stderrEnded is, for a copy that exited, "; its stderr ended: " and the
// last lines of its log (masked and quoted: see stderrTail); "" when it
// wrote none.
func (a *adapter) stderrEnded() string {
	a.logsWritten(time.Second)
	if tail := stderrTail(a.logPath, 3); tail != "" {
		return "; its stderr ended: " + tail
	}
	return ""
}

// call sends a request and waits up to d for its reply.
func (k *conformance) call(a *adapter, req func(id int64) any, d time.Duration) (int64, time.Time, reply) {
	sent := time.Now()
	id, err := a.send(req)
	if err != nil {
		return id, sent, reply{}
	}
	return id, sent, k.wait(a, id, sent, d)
}

// describe writes a reply in plain words.
func describe(r reply) string {
	if !r.ok && r.why != "" {
		return "no reply (" + r.why + ")"
	}
	if !r.ok {
		return "no reply"
	}
	return answer(r) + " after " + r.after.Round(time.Millisecond).String()
}

// loginHint is, for a reply whose error says the client did not log in,
// " — " and where to look (see LoginHint); "" otherwise.
func loginHint(r reply) string {
	if h := LoginHint(r.m.Error); r.ok && h != "" {
		return " — " + h
	}
	return ""
}

// answer writes a reply's type and error, without its time.
func answer(r reply) string {
	s := r.m.Type
	if r.m.Error != "" {
		s += fmt.Sprintf(" (%q)", r.m.Error)
	}
	return s
}

// describeAll writes replies in plain words, those of the same answer
// together: `info ("i/o timeout") after 181ms and 182ms`.
func describeAll(rs []reply) string {
	var order []string
	times := map[string][]string{}
	for _, r := range rs {
		a := answer(r)
		if _, ok := times[a]; !ok {
			order = append(order, a)
		}
		times[a] = append(times[a], r.after.Round(time.Millisecond).String())
	}
	var out []string
	for _, a := range order {
		out = append(out, a+" after "+joinAnd(times[a]))
	}
	return joinAnd(out)
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
	_, _, r := k.call(a, func(id int64) any { req.ID = id; return req }, defaultOpenTimeout)
	switch {
	case !r.ok && r.why != "":
		k.broke("open", "%s did not answer open: %s", a.name, r.why)
		return false
	case !r.ok:
		why := "no reply to open within " + defaultOpenTimeout.String()
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

// withID makes a request of m, its "id" set.
func withID(m map[string]any) func(id int64) any {
	return func(id int64) any {
		m["id"] = id
		return m
	}
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// links returns copy p's links to every server, made on first use.
func (k *conformance) links(p int) []*links.Link {
	var out []*links.Link
	for _, s := range k.cl.Servers() {
		if l, err := k.cl.Link(links.ClientName(p), s); err == nil && l != nil {
			out = append(out, l)
		}
	}
	return out
}

// fault puts a fault on every link of copy p; heal removes it.
func (k *conformance) fault(p int, add func(l *links.Link) (string, error)) (heal func()) {
	type made struct {
		l *links.Link
		h string
	}
	var ms []made
	for _, l := range k.links(p) {
		if h, err := add(l); err == nil {
			ms = append(ms, made{l, h})
		}
	}
	return func() {
		for _, m := range ms {
			_ = m.l.Heal(context.Background(), m.h)
		}
	}
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
		k.kept("late grant", "client 0's %s came %s after timeout_ms and %s given back (client 1 could take the key)", words.Noun(len(givenBack), "grant", words.Count(len(givenBack), "grant", "grants")), joinAnd(givenBack), wasWere(len(givenBack)))
	}
	if len(kept) > 0 {
		k.broke("late grant", "client 0 answered ok %s after timeout_ms (%s, the link was %s): the harness had given up and recorded info, and never releases it — but the adapter kept the lock%s (client 1 then got %s). Give a grant that comes too late back at once",
			joinAnd(kept), to, how, times(len(kept)), joinAnd(client1))
	}
	k.answeredAll(how, reqs)
}

// acquires is "an acquire" or "N acquires".
func acquires(n int) string {
	if n == 1 {
		return "an acquire"
	}
	return strconv.Itoa(n) + " acquires"
}

// times is "" for once, " both times" or " all N times" for more.
func times(n int) string {
	switch {
	case n <= 1:
		return ""
	case n == 2:
		return " both times"
	}
	return fmt.Sprintf(" all %d times", n)
}

// wasWere is "was" for one, "were" for more.
func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
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

// pause waits d, or until the check is interrupted.
func (k *conformance) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-k.ctx.Done():
	}
}

// exitsWithin is exitsWithin(a, d), cut short (false) when the check is
// interrupted.
func (k *conformance) exitsWithin(a *adapter, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.exited:
		return true
	case <-t.C:
		return false
	case <-k.ctx.Done():
		return false
	}
}

// exitsWithin reports whether the copy exits within d.
func exitsWithin(a *adapter, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.exited:
		return true
	case <-t.C:
		return false
	}
}

// Text writes the report: one line per finding, the broken first, then a
// last line counting them.
func (r *CheckReport) Text() string {
	var sb strings.Builder
	broken := r.Broken()
	for _, f := range broken {
		fmt.Fprintf(&sb, "BROKEN  %-20s %s\n", f.Rule, f.Says)
	}
	for _, f := range r.Findings {
		if !f.Broken {
			fmt.Fprintf(&sb, "ok      %-20s %s\n", f.Rule, f.Says)
		}
	}
	if len(broken) == 0 {
		sb.WriteString("the adapter kept every rule checked (" + strconv.Itoa(len(r.Findings)) + ")\n")
	} else {
		fmt.Fprintf(&sb, "the adapter broke %d of the protocol's rules: fix them before trusting any verdict\n", len(broken))
	}
	return sb.String()
}
