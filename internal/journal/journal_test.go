package journal

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain registers the test's undo kinds and lets the test binary be a
// guard (StartGuard re-executes it).
func TestMain(m *testing.M) {
	Register("touch", func(_ context.Context, args map[string]string) error {
		f, err := os.OpenFile(args["path"], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(args["mark"] + "\n")
		return err
	})
	Register("fail", func(context.Context, map[string]string) error { return errors.New("server unreachable") })
	// A process stopped with SIGSTOP stands for a paused container.
	Register("sigcont", func(_ context.Context, args map[string]string) error {
		pid, err := strconv.Atoi(args["pid"])
		if err != nil {
			return err
		}
		return syscall.Kill(pid, syscall.SIGCONT)
	})
	RunGuardIfAsked()
	os.Exit(m.Run())
}

func touch(path, mark string) Action {
	return Action{Kind: "touch", Args: map[string]string{"path": path, "mark": mark}, What: "touch " + mark}
}

// TestCloseRemovesWhenAllDone: a journal whose acts were all undone by the
// run is removed at Close; one with an act left stays, for replay.
func TestCloseRemovesWhenAllDone(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, "owner", "run")
	if err != nil {
		t.Fatal(err)
	}
	done, err := j.Add(touch(filepath.Join(dir, "x"), "a"))
	if err != nil {
		t.Fatal(err)
	}
	done()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(j.Path()); !os.IsNotExist(err) {
		t.Errorf("journal still there after every act was done: %v", err)
	}
	j2, _ := Create(dir, "owner", "run")
	if _, err := j2.Add(touch(filepath.Join(dir, "x"), "b")); err != nil {
		t.Fatal(err)
	}
	if err := j2.Close(); err == nil || !strings.Contains(err.Error(), "1 undo(s) left") {
		t.Errorf("Close = %v, want it to say an undo is left", err)
	}
	if _, err := os.Stat(j2.Path()); err != nil {
		t.Errorf("a journal with an act left was removed: %v", err)
	}
}

// TestReplay: the acts not done are undone last first and the file is
// removed; a failing undo leaves the journal (with what did succeed marked
// done) for the next try; live owners' journals are left alone.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	j, _ := Create(dir, "dead", "run")
	for _, m := range []string{"1", "2", "3"} {
		done, err := j.Add(touch(out, m))
		if err != nil {
			t.Fatal(err)
		}
		if m == "2" {
			done()
		}
	}
	live, _ := Create(dir, "alive", "run")
	if _, err := live.Add(touch(out, "live")); err != nil {
		t.Fatal(err)
	}
	undone, errs := ReplayDead(context.Background(), dir, func(o string) bool { return o == "alive" })
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if b, _ := os.ReadFile(out); string(b) != "3\n1\n" || strings.Join(undone, ",") != "touch 3,touch 1" {
		t.Errorf("undid %q (%v), want 3 then 1", b, undone)
	}
	if _, err := os.Stat(j.Path()); !os.IsNotExist(err) {
		t.Errorf("replayed journal left: %v", err)
	}
	if _, err := os.Stat(live.Path()); err != nil {
		t.Errorf("a live run's journal was touched: %v", err)
	}

	f, _ := Create(dir, "dead", "run")
	_, _ = f.Add(touch(out, "ok"))
	_, _ = f.Add(Action{Kind: "fail"})
	_, err := Replay(context.Background(), f.Path())
	if err == nil || !strings.Contains(err.Error(), "server unreachable") {
		t.Fatalf("Replay = %v, want the failure", err)
	}
	if c, _ := read(f.Path()); len(c.pending) != 1 {
		t.Errorf("after a failed replay %d acts pending, want 1 (the failed one)", len(c.pending))
	}
}

// TestGuard: the guard replays the journal when its harness's end of the
// pipe closes with the journal still there (the harness died), and does
// nothing when the harness closed its journal first.
func TestGuard(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	j, _ := Create(dir, "me", "run")
	stop, err := StartGuard(j, exe)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Add(touch(out, "undone by the guard")); err != nil {
		t.Fatal(err)
	}
	stop() // as the harness's death closes it: the journal is still there
	for {
		if b, _ := os.ReadFile(out); string(b) == "undone by the guard\n" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		if _, err := os.Stat(j.Path()); os.IsNotExist(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	clean, _ := Create(dir, "me", "run")
	stop, err = StartGuard(clean, exe)
	if err != nil {
		t.Fatal(err)
	}
	done, _ := clean.Add(touch(out, "must not run"))
	done()
	if err := clean.Close(); err != nil {
		t.Fatal(err)
	}
	stop() // waits for the guard to exit
	if b, _ := os.ReadFile(out); strings.Contains(string(b), "must not run") {
		t.Error("the guard undid an act the run had undone")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 {
		t.Errorf("left in the journal dir: %v, want only out", left)
	}
}

// stoppedProcess starts a process and stops it (SIGSTOP), as a paused
// container stands; the test kills it at the end.
func stoppedProcess(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for !isStopped(t, cmd.Process.Pid) {
		time.Sleep(10 * time.Millisecond)
	}
	return cmd.Process.Pid
}

// isStopped reads the process's state from /proc: T is stopped.
func isStopped(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0] == "T"
}

// aged sets a file's times back, as a journal left long ago.
func aged(t *testing.T, path string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// oneReport checks that errs is one error, one line, naming path and
// holding each of has.
func oneReport(t *testing.T, errs []error, path string, has ...string) {
	t.Helper()
	if len(errs) != 1 {
		t.Fatalf("%d errors %v, want one report of %s", len(errs), errs, path)
	}
	msg := errs[0].Error()
	t.Logf("report: %s", msg)
	if strings.Contains(msg, "\n") || !strings.Contains(msg, path) {
		t.Errorf("report %q: want one line naming %s", msg, path)
	}
	for _, h := range has {
		if !strings.Contains(msg, h) {
			t.Errorf("report %q: want it to say %q", msg, h)
		}
	}
}

// TestReplayCutJournal: a journal cut short after its harness and guard
// were killed (kill -9 of both) has what can be read undone — the paused
// process thawed — and what cannot reported in one line: the file and the
// cut record's text; the file is kept, never removed unread, and the next
// sweep undoes nothing twice and reports it again.
func TestReplayCutJournal(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	pid := stoppedProcess(t)
	j, _ := Create(dir, "dead", "store/x/run-1")
	if _, err := j.Add(Action{Kind: "sigcont", Args: map[string]string{"pid": strconv.Itoa(pid)}, What: "thaw the process"}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Add(touch(out, "1")); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Add(touch(out, "last, cut")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(j.Path())
	cut := len(b) - 25 // inside the last record
	if err := os.Truncate(j.Path(), int64(cut)); err != nil {
		t.Fatal(err)
	}
	undone, errs := ReplayDead(context.Background(), dir, func(string) bool { return false })
	if strings.Join(undone, ",") != "touch 1,thaw the process" {
		t.Errorf("undid %v, want the complete records: touch 1, then the thaw", undone)
	}
	if isStopped(t, pid) {
		t.Error("the process the readable record undoes is still stopped")
	}
	oneReport(t, errs, j.Path(), "store/x/run-1", `"touch"`)
	if _, err := os.Stat(j.Path()); err != nil {
		t.Fatalf("a journal that could not be read whole was removed: %v", err)
	}
	undone, errs = ReplayDead(context.Background(), dir, func(string) bool { return false })
	if len(undone) != 0 {
		t.Errorf("the next sweep undid %v again", undone)
	}
	oneReport(t, errs, j.Path())
	if b, _ := os.ReadFile(out); string(b) != "1\n" {
		t.Errorf("undone %q, want the one complete touch once", b)
	}
}

// TestReplayGarbageJournal: a journal overwritten with garbage is reported
// in one line, its file named, and kept; one whose header names no owner
// is not passed over for good: once older than a header takes to write
// it is replayed as a dead harness's (and a fresh one is left alone).
func TestReplayGarbageJournal(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	garbage := filepath.Join(dir, "run-garbage.jsonl")
	if err := os.WriteFile(garbage, []byte("\x00\x17garbage\n\xff{not json\nmore garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	aged(t, garbage, time.Hour)
	undone, errs := ReplayDead(context.Background(), dir, func(string) bool { return false })
	if len(undone) != 0 {
		t.Errorf("undid %v from garbage", undone)
	}
	oneReport(t, errs, garbage, "garbage")
	if _, err := os.Stat(garbage); err != nil {
		t.Fatalf("the garbage journal was removed unread: %v", err)
	}
	os.Remove(garbage)

	ownerless := filepath.Join(dir, "run-ownerless.jsonl")
	text := `{"run":"r","time":` + strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10) + "}\n" +
		`{"add":1,"action":{"kind":"touch","args":{"mark":"ownerless","path":"` + out + `"}}}` + "\n"
	if err := os.WriteFile(ownerless, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "run-fresh.jsonl")
	if err := os.WriteFile(fresh, []byte(`{"own`), 0o600); err != nil {
		t.Fatal(err)
	}
	aged(t, ownerless, time.Hour)
	undone, errs = ReplayDead(context.Background(), dir, func(string) bool { return false })
	if len(errs) != 0 || strings.Join(undone, ",") != "touch" {
		t.Errorf("undid %v (%v), want the ownerless journal's touch", undone, errs)
	}
	if b, _ := os.ReadFile(out); string(b) != "ownerless\n" {
		t.Errorf("undone %q, want the ownerless journal's act", b)
	}
	if _, err := os.Stat(ownerless); !os.IsNotExist(err) {
		t.Errorf("the ownerless journal, all undone, is still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a journal being created (no header yet, just made) was touched: %v", err)
	}
}
