// Package journal keeps, for a run that acts on servers it does not own,
// what would undo each of its acts, on disk, written before the act: so
// that when the harness dies before it can undo them itself (kill -9), its
// guard process, or else the next run, undoes them.
//
// A journal is one file of JSON lines: a header naming its owner, then an
// "add" line for each act (an Action: a kind and its arguments, which a
// registered Undo carries out) and a "done" line when the run undid it
// itself. Replay undoes what was added and not done, last first, and
// removes the file once nothing is left; a file that cannot be read whole
// (cut short, overwritten) has what can be read undone and is kept, and
// reported, never removed unread. The package knows no server: the
// kinds of undo are registered by the packages that act (Register).
package journal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// Action is one undo: a kind (registered with Register) and its arguments.
type Action struct {
	Kind string            `json:"kind"`
	Args map[string]string `json:"args,omitempty"`
	// What says in words what it undoes, for logs.
	What string `json:"what,omitempty"`
}

// Undo carries out one kind of action.
type Undo func(ctx context.Context, args map[string]string) error

var (
	undoMu sync.Mutex
	undos  = map[string]Undo{}
)

// Register makes kind replayable.
func Register(kind string, f Undo) {
	undoMu.Lock()
	defer undoMu.Unlock()
	undos[kind] = f
}

func undoOf(kind string) Undo {
	undoMu.Lock()
	defer undoMu.Unlock()
	return undos[kind]
}

// line is one line of a journal file.
type line struct {
	Owner  string  `json:"owner,omitempty"`
	Run    string  `json:"run,omitempty"`
	Time   int64   `json:"time,omitempty"` // the header's: when the run began (Unix seconds)
	Add    int     `json:"add,omitempty"`
	Action *Action `json:"action,omitempty"`
	Done   int     `json:"done,omitempty"`
}

// Journal is one run's journal, open for writing.
type Journal struct {
	path string
	mu   sync.Mutex
	f    *os.File
	n    int
	open map[int]bool // added, not yet done
}

// Dir is where journals live: one directory per user, private.
func Dir() string {
	if d := os.Getenv("LOCKTORTURE_JOURNAL_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf(".locktorture-journal-%d", os.Getuid()))
}

// Create makes a new journal in dir for a run, owned by owner (a process
// identity that Replay's alive recognises; see ReplayDead).
func Create(dir, owner, run string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	f, err := os.CreateTemp(dir, "run-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{path: f.Name(), f: f, open: map[int]bool{}}
	if err := j.write(line{Owner: owner, Run: run, Time: time.Now().Unix()}); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return j, nil
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// write appends one line and syncs it to disk (the caller holds j.mu or
// owns j alone).
func (j *Journal) write(l line) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Add records a, before the act it undoes is done; it returns the
// function that records the run's own undo of it (call it once the act is
// undone). An error means the act must not be done.
func (j *Journal) Add(a Action) (done func(), err error) {
	if j == nil {
		return func() {}, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.n++
	id := j.n
	if err := j.write(line{Add: id, Action: &a}); err != nil {
		return nil, err
	}
	j.open[id] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			if j.f != nil && j.open[id] {
				delete(j.open, id)
				_ = j.write(line{Done: id})
			}
		})
	}, nil
}

// Close closes the journal. When everything added was done it removes the
// file; otherwise it leaves it for the guard or the next run to replay, and
// says so.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if len(j.open) == 0 {
		if rerr := os.Remove(j.path); rerr != nil && err == nil {
			err = rerr
		}
		return err
	}
	if err == nil {
		err = fmt.Errorf("journal: %d undo(s) left in %s for the guard or the next run", len(j.open), j.path)
	}
	return err
}

// contents is what read makes of a journal file.
type contents struct {
	hdr     line
	pending []int          // added and not done, in order
	acts    map[int]Action // by id
	// bad are the parts that could not be read (a line cut short, garbage,
	// a header that is not one), in words; empty when the file was read
	// whole.
	bad []string
	// cut says the file does not end with a newline: a line appended to it
	// must start a line of its own.
	cut bool
}

// maxLine is the longest line read: a journal's lines are short.
const maxLine = 1 << 20

// read parses a journal file: its header, the actions added and not done,
// and what could not be read. A journal's every line is written whole and
// synced before its act, so a line that cannot be read — the last one cut
// short included — is damage (a file truncated or overwritten), never
// passed over: its act may have been done.
func read(path string) (contents, error) {
	c := contents{acts: map[int]Action{}}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	c.cut = len(b) > 0 && b[len(b)-1] != '\n'
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), maxLine)
	n := 0
	for sc.Scan() {
		n++
		var l line
		ok := json.Unmarshal(sc.Bytes(), &l) == nil
		switch {
		case n == 1 && ok && (l.Owner != "" || l.Run != "" || l.Time > 0):
			c.hdr = l
		case n == 1:
			c.bad = append(c.bad, "its header (line 1) is not one: "+snippet(sc.Bytes()))
		case ok && l.Add > 0 && l.Action != nil:
			c.acts[l.Add] = *l.Action
			c.pending = append(c.pending, l.Add)
		case ok && l.Done > 0:
			delete(c.acts, l.Done)
		case len(bytes.TrimSpace(sc.Bytes())) == 0:
		default:
			c.bad = append(c.bad, fmt.Sprintf("line %d cannot be read: %s", n, snippet(sc.Bytes())))
		}
	}
	if err := sc.Err(); err != nil {
		c.bad = append(c.bad, fmt.Sprintf("line %d on cannot be read: %v", n+1, err))
	}
	if len(b) == 0 {
		c.bad = append(c.bad, "it is empty (no header)")
	}
	c.pending = slices.DeleteFunc(c.pending, func(id int) bool { _, ok := c.acts[id]; return !ok })
	return c, nil
}

// snippet shows the start of an unreadable line, between backquotes, with
// any byte that is not printable text as '?': what it may have recorded
// (a journal holds no password).
func snippet(b []byte) string {
	const most = 100
	more := ""
	if len(b) > most {
		b, more = b[:most], "…"
	}
	s := strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, string(b))
	return "`" + s + more + "`"
}

// Replay undoes, last first, every action of the journal at path not yet
// done, marking each done as it goes; it removes the file when nothing is
// left. It holds an exclusive lock on the file meanwhile: a journal that
// another process is replaying is left to it (errBusy). It returns what it
// undid, in words, and the first failures. A journal that cannot be read
// whole has what can be read undone and is kept, never removed unread:
// the error (wrapping ErrDamaged) names its file and what it may have
// left undone.
func Replay(ctx context.Context, path string) (undone []string, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil, fmt.Errorf("%w: %s", errBusy, path)
	}
	c, err := read(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{path: path, f: f}
	if c.cut && len(c.pending) > 0 {
		// The done lines below must not join the cut line.
		_, _ = f.WriteString("\n")
	}
	var errs []error
	for i := len(c.pending) - 1; i >= 0; i-- {
		id := c.pending[i]
		a := c.acts[id]
		u := undoOf(a.Kind)
		if u == nil {
			errs = append(errs, fmt.Errorf("journal: %s: no undo for kind %q", path, a.Kind))
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		uerr := u(actx, a.Args)
		cancel()
		if uerr != nil {
			errs = append(errs, fmt.Errorf("journal: %s: %w", orKind(a), uerr))
			continue
		}
		_ = j.write(line{Done: id})
		undone = append(undone, orKind(a))
	}
	if len(c.bad) > 0 {
		errs = append([]error{damaged(path, c, len(undone))}, errs...)
	}
	if len(errs) == 0 {
		_ = os.Remove(path)
		_ = os.Remove(path + ".guard.log")
	}
	return undone, errors.Join(errs...)
}

// ErrDamaged is wrapped when a journal cannot be read whole.
var ErrDamaged = errors.New("cannot be read whole")

// damaged is the one line that reports a journal that cannot be read
// whole: its file, its run, what could not be read (what it may have left
// undone) and what was undone from the rest.
func damaged(path string, c contents, undid int) error {
	run := ""
	if c.hdr.Run != "" {
		run = " (run " + c.hdr.Run + ")"
	}
	what := c.bad[0]
	if len(c.bad) > 1 {
		what += fmt.Sprintf(" and %d more unreadable line(s)", len(c.bad)-1)
	}
	return fmt.Errorf("journal %s%s %w: %s; an act recorded there may still need undoing by hand (a paused or killed container, a replica's masterauth, a run's keys); %d readable undo(s) done; the file is kept: remove it once checked",
		path, run, ErrDamaged, what, undid)
}

func orKind(a Action) string {
	if a.What != "" {
		return a.What
	}
	return a.Kind
}

// errBusy is wrapped when a journal is being replayed by another process.
var errBusy = errors.New("journal: being replayed elsewhere")

// maxAge is how long a journal whose undos keep failing (its servers are
// gone for good) is tried again: after that ReplayDead drops it, saying so.
const maxAge = 24 * time.Hour

// headerGrace is how long a journal with no owner in its header is taken
// for one being created (Create writes the header at once): after that
// its harness is taken to be gone.
const headerGrace = time.Minute

// ReplayDead replays every journal in dir whose owner alive says is gone
// (a harness killed before it undid its acts) and returns what it undid
// and what failed, in words. Journals of live runs, and those another
// process is replaying, are left alone; one whose header names no owner is
// taken as a dead harness's once older than headerGrace. One whose undos
// still fail maxAge after its run began is dropped; one that cannot be
// read whole is never dropped: it is reported (one error, one line) each
// time.
func ReplayDead(ctx context.Context, dir string, alive func(owner string) bool) (undone []string, errs []error) {
	paths, _ := filepath.Glob(filepath.Join(dir, "run-*.jsonl"))
	for _, p := range paths {
		c, err := read(p)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("journal %s: %w", p, err))
			}
			continue
		}
		began := time.Unix(c.hdr.Time, 0)
		if c.hdr.Time == 0 {
			st, err := os.Stat(p)
			if err != nil {
				continue
			}
			began = st.ModTime()
		}
		if c.hdr.Owner != "" && alive(c.hdr.Owner) {
			continue
		}
		if c.hdr.Owner == "" && time.Since(began) < headerGrace {
			continue // being created
		}
		u, err := Replay(ctx, p)
		undone = append(undone, u...)
		if err != nil && !errors.Is(err, errBusy) {
			if !errors.Is(err, ErrDamaged) && time.Since(began) > maxAge {
				_ = os.Remove(p)
				_ = os.Remove(p + ".guard.log")
				err = fmt.Errorf("%w (given up: the run began over %s ago)", err, maxAge)
			}
			errs = append(errs, err)
		}
	}
	return undone, errs
}

// guardEnv, set to a journal's path in a process's environment, makes
// that process the journal's guard (RunGuardIfAsked).
const guardEnv = "LOCKTORTURE_GUARD"

// StartGuard starts the guard of j: this program again (exe), in a session
// of its own so that no terminal signal reaches it, with guardEnv set and
// a pipe on its stdin whose write end only this process holds. When this
// process dies, however it dies, the pipe closes and the guard replays the
// journal — unless the run closed it with nothing left to undo. stop ends
// the guard's watch (at the run's own end, after j.Close).
func StartGuard(j *Journal, exe string) (stop func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("journal: guard: %w", err)
	}
	defer r.Close()
	logf, err := os.OpenFile(j.path+".guard.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("journal: guard: %w", err)
	}
	defer logf.Close()
	p, err := os.StartProcess(exe, []string{exe, "guard"}, &os.ProcAttr{
		Env:   append(os.Environ(), guardEnv+"="+j.path),
		Files: []*os.File{r, logf, logf},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("journal: guard: %w", err)
	}
	exited := make(chan struct{})
	go func() { _, _ = p.Wait(); close(exited) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.Close()
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
			}
		})
	}, nil
}

// RunGuardIfAsked makes this process a guard when guardEnv says so: it
// waits until its stdin ends (the harness is gone or done), then replays
// the journal if it is still there (the harness died before undoing its
// acts), and exits. It returns at once in any other process. A program
// calls it after every kind of undo is registered, before anything else.
func RunGuardIfAsked() {
	path := os.Getenv(guardEnv)
	if path == "" {
		return
	}
	os.Exit(guard(path, os.Stdin))
}

// guard is the guard's body; its exit code is 0 when nothing was left or
// everything was undone.
func guard(path string, stdin *os.File) int {
	signalsIgnored()
	buf := make([]byte, 512)
	for {
		if _, err := stdin.Read(buf); err != nil {
			break
		}
	}
	if _, err := os.Stat(path); err != nil {
		_ = os.Remove(path + ".guard.log")
		return 0 // the run closed its journal: nothing to undo
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	undone, err := Replay(ctx, path)
	for _, u := range undone {
		fmt.Fprintf(os.Stderr, "%s guard: undid %s\n", time.Now().Format(time.RFC3339), u)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s guard: %v\n", time.Now().Format(time.RFC3339), strings.ReplaceAll(err.Error(), "\n", "; "))
		return 1
	}
	_ = os.Remove(path + ".guard.log")
	return 0
}

// signalsIgnored keeps a guard alive through the signals that end its
// harness's terminal session (Ctrl-C, a closed terminal).
func signalsIgnored() {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
}
