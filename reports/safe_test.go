package reports

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// TestRenderPanicIsAnError: a file that panics while drawn is an error
// wrapping ErrDraw; the other files are still written.
func TestRenderPanicIsAnError(t *testing.T) {
	dir := t.TempDir()
	w := &fileWriter{ctx: context.Background(), dir: dir}
	w.write("a.txt", func() ([]byte, error) { panic("integer divide by zero") })
	w.write("b.txt", func() ([]byte, error) { return []byte("ok"), nil })
	if err := w.err(); !errors.Is(err, ErrDraw) {
		t.Fatalf("want ErrDraw, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); err != nil {
		t.Errorf("a later file was not written: %v", err)
	}
}

// TestLatencyIgnoresOpTypesOutsideTheContract: the latency plot once
// divided by zero on an op type it did not know.
func TestLatencyIgnoresOpTypesOutsideTheContract(t *testing.T) {
	ops := []history.Op{
		{Index: 0, Time: 100, Process: 0, Type: history.Invoke, F: history.Acquire, Key: "k0"},
		{Index: 1, Time: 200, Process: 0, Type: "OK", F: history.Acquire, Key: "k0"},
		{Index: 2, Time: 300, Process: 1, Type: history.Invoke, F: history.Acquire, Key: "k0"},
		{Index: 3, Time: 400, Process: 1, Type: "bogus", F: history.Acquire, Key: "k0"},
	}
	if _, err := latencyPNG(ops, "h"); err != nil {
		t.Fatal(err)
	}
	res := &checker.Results{Valid: checker.Unknown}
	if err := WriteRun(context.Background(), t.TempDir(), ops, res, RunInfo{}); err != nil {
		t.Fatal(err)
	}
}
