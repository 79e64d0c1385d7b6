package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	// A harness killed mid-write leaves a cut line: ignored.
	_, _ = j.f.WriteString(`{"add":4,"action":{"kind":"tou`)
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
	if _, pending, _, _ := read(f.Path()); len(pending) != 1 {
		t.Errorf("after a failed replay %d acts pending, want 1 (the failed one)", len(pending))
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
