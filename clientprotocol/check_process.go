// client-check's copies of the adapter: starting them, reading what
// they write, sending requests and waiting for replies, faults on their
// links, and ending them.

package clientprotocol

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/cluster/links"
)

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
	cmd.Env = append(os.Environ(), sortedEnv(k.opt.Env)...)
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
	copyRedacted(r, log)
	_ = log.finish()
}

// logsWritten waits up to d for the copy's log to be written whole.
func (a *adapter) logsWritten(d time.Duration) { closedWithin(a.logDone, d, nil) }

// kill ends the copy's whole process group.
func (a *adapter) kill() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	continueAndKill(-a.cmd.Process.Pid)
	closedWithin(a.exited, 2*time.Second, nil)
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
	return closedWithin(a.exited, d, k.ctx.Done())
}

// exitsWithin reports whether the copy exits within d.
func exitsWithin(a *adapter, d time.Duration) bool { return closedWithin(a.exited, d, nil) }
