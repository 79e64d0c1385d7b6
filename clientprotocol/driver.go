package clientprotocol

import (
	"github.com/locktorture/locktorture/internal/secret"

	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
)

// child drives one client process: the harness side of the protocol. It is
// the backends.Client the client loop calls.
type child struct {
	l       *Launcher
	p       int
	logPath string
	cmd     *exec.Cmd
	pgid    int
	stdin   *os.File
	given   cluster.ServerSet
	auth    cluster.AuthSet // given.Auth, TLS files copied for the child
	gate    *clientfault.Gate
	clock   *clientfault.Clock
	hist    *history.Proc

	abilities []string

	wmu    sync.Mutex // one writer at a time
	callMu sync.Mutex // one request outstanding

	mu        sync.Mutex
	nextID    int64
	cur       int64
	curCh     chan Message // nil when no request waits
	abandoned map[int64]bool
	lost      map[string]chan struct{} // the current grant's, by key
	// acqKey and acqLost are the key and Lost channel of the acquire
	// outstanding: deliver registers the channel in lost when its ok
	// comes, on the reading goroutine, so a lost event right behind the
	// reply finds it.
	acqKey    string
	acqLost   chan struct{}
	closing   bool
	signalled bool // the harness killed it: its exit is expected

	events     chan Message
	eventsDone chan struct{} // closed when handleEvents has recorded its last
	closeSent  time.Time     // when shutdown asked the child to close
	fatal      error
	fatalCh    chan struct{}
	once       sync.Once

	tag            string        // its ownerEnv value
	stdout, stderr *os.File      // the read ends of its pipes
	log            *capLog       // its stderr, capped, into client-N.log
	exited         chan struct{} // closed when the process has exited
	readDone       chan struct{} // closed when stdout has been read to its end (or given up)
	logDone        chan struct{} // closed when stderr has been copied (or given up)
	done           chan struct{} // closed when all of the above are over
}

// pipeGrace is how long the pipes of a child that exited are still read:
// a process it started may hold them open forever.
const pipeGrace = time.Second

func (c *child) name() string { return fmt.Sprintf("client %d", c.p) }

// die records the child's failure (the first one counts), tells the
// launcher, and kills the child.
func (c *child) die(err error) {
	c.once.Do(func() {
		c.fatal = fmt.Errorf("%s (its log: %s): %w", c.name(), c.logPath, err)
		close(c.fatalCh)
		c.l.fail(c.fatal)
	})
	c.kill()
}

func (c *child) err() error {
	select {
	case <-c.fatalCh:
		return c.fatal
	default:
		return nil
	}
}

// read reads the child's stdout until it ends (or wait gives up on it),
// handing replies to the waiting request and events to handleEvents.
func (c *child) read(stdout io.Reader) {
	defer close(c.readDone)
	defer close(c.events)
	sc := newLineScanner(stdout)
	var perr error
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		m, err := parseMessage(line)
		if err != nil {
			perr = err
			break
		}
		if m.Event != "" {
			c.events <- m
			continue
		}
		if err := c.deliver(m); err != nil {
			perr = err
			break
		}
	}
	if perr == nil {
		perr = lineErr(sc.Err())
	}
	switch {
	case errors.Is(perr, os.ErrClosed):
		// wait gave up on the pipe: said there.
	case perr != nil:
		c.die(perr)
	}
}

// copyLog copies the child's stderr into its capped log.
// Line by line, every secret the harness knows masked as it is written:
// the file in the store never holds one, not even while the run goes on
// (finish masks the whole file again, for a secret split by a long line).
func (c *child) copyLog() {
	defer close(c.logDone)
	copyRedacted(c.stderr, c.log)
}

// copyRedacted copies r to w line by line, every secret the harness knows
// masked (secret.Redact), until r ends; a line longer than the reader's
// buffer is copied in pieces.
func copyRedacted(r io.Reader, w io.Writer) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			_, _ = w.Write([]byte(secret.Redact(string(line))))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// closedWithin waits up to d for ch to close, or until stop closes (nil:
// never); it reports whether ch closed.
func closedWithin(ch <-chan struct{}, d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	case <-stop:
		return false
	}
}

// wait waits for the child to exit, then for its pipes to end — at most
// pipeGrace: whatever still holds them then is a process the child left
// behind, which is killed and named. Then it judges the exit: one the
// harness did not ask for fails the run.
func (c *child) wait() {
	defer close(c.done)
	werr := c.cmd.Wait()
	close(c.exited)
	pipes := func() <-chan struct{} {
		ch := make(chan struct{})
		go func() { <-c.readDone; <-c.logDone; close(ch) }()
		return ch
	}()
	t := time.NewTimer(pipeGrace)
	select {
	case <-pipes:
	case <-t.C:
		left := procsTagged(func(tag string) bool { return tag == c.tag })
		killAll(left)
		for _, p := range left {
			c.l.warn("%s left %s running, holding its output open after it ended; the harness killed it", c.name(), p)
		}
		if len(left) == 0 {
			c.l.warn("%s ended but something still held its output open; the harness stopped reading it", c.name())
		}
		t.Reset(pipeGrace / 4)
		select {
		case <-pipes:
		case <-t.C:
		}
	}
	t.Stop()
	// Closing the read ends ends a read still blocked on them.
	_ = c.stdout.Close()
	_ = c.stderr.Close()
	<-pipes
	if err := c.log.finish(); err != nil {
		c.l.warn("%s: writing its log: %v", c.name(), err)
	}
	if cut := c.log.Cut(); cut > 0 {
		c.l.warn("%s's log was cut: %d bytes left out of the middle (a client log keeps its first and last %s; see %s)", c.name(), cut, sizeText(c.log.cap/2), c.logPath)
	}
	c.mu.Lock()
	expected := c.closing || c.signalled
	c.mu.Unlock()
	if !expected {
		why := "exit status 0"
		if werr != nil {
			why = werr.Error()
		}
		if tail := logTail(c.logPath, 3); tail != "" {
			why += "; its stderr ended: " + tail
		}
		c.die(fmt.Errorf("%w before it was told to close (%s)", errExited, why))
	}
}

// logTail returns the last n non-empty lines of the log at path, on one
// line (joined by " | ", each cut to 200 bytes): why a program that died
// at start died — an import error, say — said in the harness's own line.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 4096
	if st, err := f.Stat(); err == nil && st.Size() > window {
		_, _ = f.Seek(st.Size()-window, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, window))
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			lines = append(lines, l)
		}
	}
	lines = lines[max(0, len(lines)-n):]
	return strings.Join(lines, " | ")
}

// sizeText writes a size in MiB, or in bytes below one.
func sizeText(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// deliver hands a reply to the request it answers; a late reply to a
// request that timed out is dropped.
func (c *child) deliver(m Message) error {
	id := *m.ID
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.curCh != nil && id == c.cur:
		if c.acqLost != nil && m.Type == TypeOK {
			c.lost[c.acqKey] = c.acqLost
		}
		c.curCh <- m
		c.curCh = nil
		return nil
	case c.abandoned[id]:
		delete(c.abandoned, id)
		return nil
	}
	return fmt.Errorf("%w: a reply to id %d, which no request outstanding has", errProtocol, id)
}

// openExtend is an extend the child invoked and has not completed.
type openExtend struct {
	op   *history.BackgroundOp
	wall time.Time // when it was invoked, by the wall clock
}

// handleEvents records the child's extend events as the process's extend
// ops and closes a grant's Lost channel on a lost event, in order. An
// extend is recorded in the background (history.Proc.InvokeBackground):
// the process's next op never waits for it, but ends it as info if it is
// still open then, and its late completion is dropped (said in run.log).
// Extends the child never completed are named in the run's warnings.
func (c *child) handleEvents() {
	defer close(c.eventsDone)
	var open *openExtend
	var never []history.Op // invokes of extends the child never completed
	// abandon ends the open extend, which the child will not complete:
	// as info with why, unless the process went on first (info already).
	abandon := func(why string, named bool) {
		if _, _, superseded := open.op.Superseded(); !superseded {
			_, _ = open.op.Complete(history.Op{Type: history.Info, F: history.Extend, Key: open.op.Invoked().Key, Error: why})
		}
		inv := open.op.Invoked()
		if named {
			never = append(never, inv)
		} else {
			c.l.logf("%s's extend of %s, invoked at %s into the run, was still open when the client was closed: info in the history", c.name(), inv.Key, runTime(inv.Time))
		}
		open = nil
	}
	for m := range c.events {
		switch m.Event {
		case EventExtend:
			if c.hist == nil {
				continue
			}
			if m.Phase == "invoke" {
				if open != nil {
					abandon("the client invoked another extend before completing this one", true)
				}
				b, err := c.hist.InvokeBackground(c.l.ctx, history.Op{F: history.Extend, Key: m.Key})
				if err != nil {
					continue
				}
				open = &openExtend{op: b, wall: time.Now()}
				continue
			}
			if open == nil { // a completion with no invoke: record both
				b, err := c.hist.InvokeBackground(c.l.ctx, history.Op{F: history.Extend, Key: m.Key})
				if err != nil {
					continue
				}
				open = &openExtend{op: b, wall: time.Now()}
			}
			op := history.Op{Type: history.Type(m.Type), F: history.Extend, Key: m.Key, Error: m.Error}
			if m.Type == TypeOK && m.LeaseMS != nil {
				op.LeaseMS = history.Int64(*m.LeaseMS)
			}
			if late, err := open.op.Complete(op); errors.Is(err, history.ErrSuperseded) {
				inv := open.op.Invoked()
				by, at, _ := open.op.Superseded()
				c.l.logf("%s's extend of %s, invoked at %s into the run, came back %s at %s, after the client went on to its %s at %s: not recorded (the history has it as info from then)",
					c.name(), inv.Key, runTime(inv.Time), op.Type, runTime(late.Time), by, runTime(at))
			}
			open = nil
		case EventLost:
			c.mu.Lock()
			ch := c.lost[m.Key]
			delete(c.lost, m.Key)
			c.mu.Unlock()
			if ch != nil {
				close(ch)
			}
		}
	}
	if open != nil {
		// The child ended with it open: named when it had its request
		// timeout, before it was asked to close, to complete it.
		c.mu.Lock()
		closeSent := c.closeSent
		c.mu.Unlock()
		named := closeSent.IsZero() || closeSent.Sub(open.wall) >= c.l.opt.Timeout
		abandon("the client process ended", named)
	}
	if len(never) > 0 {
		first := never[0]
		c.l.warn("%s never completed %d extend(s) it invoked (the first: its extend of %s, invoked at %s into the run): each is info in the history from when the client went on, or ended; an adapter reports every renewal's outcome, even one that comes after the release (docs/client-protocol.md)",
			c.name(), len(never), first.Key, runTime(first.Time))
	}
}

// runTime writes a history time (nanoseconds since the run started) in
// seconds.
func runTime(ns int64) string { return fmt.Sprintf("%.3fs", time.Duration(ns).Seconds()) }

// write sends one line to the child.
func (c *child) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("clientprotocol: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// A child that reads nothing for ReplyGrace is wedged (call says so).
	_ = c.stdin.SetWriteDeadline(time.Now().Add(c.l.opt.ReplyGrace))
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// call sends one request and waits for its reply, until ctx ends (the
// request timed out: its late reply will be dropped) or the child fails.
func (c *child) call(ctx context.Context, req func(id int64) any) (Message, error) {
	c.callMu.Lock()
	defer c.callMu.Unlock()
	if err := c.err(); err != nil {
		return Message{}, fmt.Errorf("%w: %w", backends.ErrAbort, err)
	}
	ch := make(chan Message, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.cur, c.curCh = id, ch
	c.mu.Unlock()
	if err := c.write(req(id)); errors.Is(err, os.ErrDeadlineExceeded) {
		c.die(fmt.Errorf("%w: it read nothing of its stdin for %s (a request could not be written)", errWedged, c.l.opt.ReplyGrace))
		return Message{}, fmt.Errorf("%w: %w", backends.ErrAbort, c.fatal)
	} else if err != nil {
		// The child is gone or going: how it exited says more than the
		// broken pipe, so that is what it dies of, when wait learns it soon.
		t := time.NewTimer(2 * pipeGrace)
		select {
		case <-c.done:
		case <-c.fatalCh:
		case <-t.C:
		}
		t.Stop()
		c.die(fmt.Errorf("%w: writing a request: %w", errExited, err))
		return Message{}, fmt.Errorf("%w: %w", backends.ErrAbort, c.fatal)
	}
	select {
	case m := <-ch:
		return m, nil
	case <-c.fatalCh:
		return Message{}, fmt.Errorf("%w: %w", backends.ErrAbort, c.fatal)
	case <-ctx.Done():
	}
	c.mu.Lock()
	abandoned := false
	if c.curCh == ch {
		c.curCh = nil
		c.abandoned[id] = true
		abandoned = true
	}
	c.mu.Unlock()
	select {
	case m := <-ch: // it came in just now
		return m, nil
	default:
	}
	if abandoned {
		go c.watchLate(id)
	}
	return Message{}, fmt.Errorf("no reply from %s: %w", c.name(), ctx.Err())
}

// watchLate waits for the late reply to request id: a child that has not
// answered it ReplyGrace after its timeout, counting only the time it was
// not paused by the harness, is wedged — a harness failure, never a run
// of timeouts the checkers would call valid.
func (c *child) watchLate(id int64) {
	const tick = 50 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	var waited time.Duration
	for {
		select {
		case <-t.C:
		case <-c.done:
			return
		case <-c.fatalCh:
			return
		}
		c.mu.Lock()
		pending, closing := c.abandoned[id], c.closing
		c.mu.Unlock()
		if !pending || closing {
			return
		}
		if c.gate != nil && c.gate.Paused() {
			continue
		}
		if waited += tick; waited >= c.l.opt.ReplyGrace {
			c.die(fmt.Errorf("%w: no reply to request %d within its timeout (%s) plus %s", errWedged, id, c.l.opt.Timeout, c.l.opt.ReplyGrace))
			return
		}
	}
}

// open sends the open request and reads the child's abilities.
func (c *child) open(ctx context.Context, timeout time.Duration) error {
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := c.call(octx, func(id int64) any {
		return OpenRequest{ID: id, Op: OpOpen, Process: c.p, TTLMS: c.l.opt.TTL.Milliseconds(), TimeoutMS: c.l.opt.Timeout.Milliseconds(),
			Servers: c.given, Auth: c.auth, Options: c.l.options}
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case errors.Is(err, context.DeadlineExceeded):
		c.die(fmt.Errorf("%w: no reply to open within %s", errOpen, timeout))
		return c.fatal
	case err != nil:
		return c.fatal
	case m.Type != TypeOK:
		c.die(fmt.Errorf("%w: it answered open with %s: %s", errOpen, m.Type, m.Error))
		return c.fatal
	}
	c.abilities = m.Abilities
	if c.gate != nil {
		c.gate.OnChange(c.freeze)
	}
	if c.clock != nil && slices.Contains(c.abilities, AbilityClock) {
		c.clock.OnChange(func(offset time.Duration, rate float64) {
			// A message with no id and no reply (see opClock).
			go func() { _ = c.write(clockMessage{Op: opClock, OffsetNS: int64(offset), Rate: rate}) }()
		})
	}
	return nil
}

// freeze stops (paused) or continues the child's whole process group.
func (c *child) freeze(paused bool) {
	sig := syscall.SIGCONT
	if paused {
		sig = syscall.SIGSTOP
	}
	_ = syscall.Kill(-c.pgid, sig)
}

// Acquire implements backends.Client.
func (c *child) Acquire(ctx context.Context, key string) (backends.Grant, error) {
	lost := make(chan struct{})
	c.mu.Lock()
	c.acqKey, c.acqLost = key, lost
	c.mu.Unlock()
	m, err := c.call(ctx, func(id int64) any { return request{ID: id, Op: OpAcquire, Key: key} })
	c.mu.Lock()
	c.acqKey, c.acqLost = "", nil
	c.mu.Unlock()
	if err != nil {
		return backends.Grant{}, err
	}
	switch m.Type {
	case TypeFail:
		if m.Error == "" || m.Error == "busy" {
			return backends.Grant{}, backends.ErrBusy
		}
		return backends.Grant{}, backends.Certain(errors.New(m.Error))
	case TypeInfo:
		return backends.Grant{}, errors.New(orUnknown(m.Error))
	}
	g := backends.Grant{Fence: m.Fence, Nodes: m.Nodes}
	if m.LeaseMS != nil {
		g.Lease, g.HasLease = time.Duration(*m.LeaseMS)*time.Millisecond, true
	}
	if m.Conn != nil {
		switch {
		case m.Conn.EtcdLockKey != "":
			g.Token = m.Conn.EtcdLockKey
			g.Conn = &backends.EtcdConn{LockKey: m.Conn.EtcdLockKey}
		case m.Conn.PGVersion != nil:
			g.Conn = backends.PGVersion{Version: *m.Conn.PGVersion}
		}
	}
	g.Lost = lost // registered in lost by deliver
	return g, nil
}

// Release implements backends.Client.
func (c *child) Release(ctx context.Context, key string, g backends.Grant) error {
	c.mu.Lock()
	if cur, ok := c.lost[key]; ok && g.Lost != nil && cur != g.Lost {
		// A retry of an earlier grant's release (its outcome was unknown)
		// while the process holds a later grant of the key: the request
		// names only the key, so the program would end the later hold
		// under its holder. The earlier hold is over: nothing to send.
		c.mu.Unlock()
		return fmt.Errorf("release %s: a later grant of the key is the process's now: %w", key, backends.ErrNotHeld)
	}
	delete(c.lost, key)
	c.mu.Unlock()
	m, err := c.call(ctx, func(id int64) any { return request{ID: id, Op: OpRelease, Key: key} })
	if err != nil {
		return err
	}
	switch m.Type {
	case TypeFail:
		if m.Error == "" || m.Error == "not held" {
			return backends.ErrNotHeld
		}
		return backends.Certain(errors.New(m.Error))
	case TypeInfo:
		return errors.New(orUnknown(m.Error))
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown (the client said info)"
	}
	return s
}

// Close implements backends.Client: the launcher closes the children.
func (c *child) Close() error { return nil }

// shutdown asks the child to close, waits a little for it to exit, and
// kills whatever is left.
func (c *child) shutdown() {
	c.mu.Lock()
	c.closing, c.closeSent = true, time.Now()
	c.mu.Unlock()
	if c.err() == nil {
		// A paused child cannot answer: it is resumed first (the run is over).
		c.freeze(false)
		ctx, cancel := context.WithTimeout(context.Background(), max(c.l.opt.Timeout, 500*time.Millisecond))
		_, err := c.call(ctx, func(id int64) any { return request{ID: id, Op: OpClose} })
		timedOut := err != nil && ctx.Err() != nil
		cancel()
		c.mu.Lock()
		unanswered := len(c.abandoned) - 1 // the close itself
		c.mu.Unlock()
		if timedOut && unanswered > 0 {
			// Silent since a request it never answered, before the grace
			// ran out (a short run): wedged all the same.
			c.die(fmt.Errorf("%w: it answered neither close nor %d earlier request(s) that timed out", errWedged, unanswered))
		}
		_ = c.stdin.Close()
		closedWithin(c.exited, time.Second, nil)
	}
	c.kill()
	<-c.done // bounded: wait reads the pipes for at most pipeGrace after the exit
}

// kill ends the child's whole process group: continued first, so that no
// process is left stopped, then SIGKILL.
func (c *child) kill() {
	c.mu.Lock()
	c.signalled = true
	c.mu.Unlock()
	continueAndKill(-c.pgid)
}
