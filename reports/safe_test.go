package reports

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
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

// TestPlotsTakeTimesOutsideTheRun: ops stamped below zero (analyze refuses
// such a history, but a report may be drawn from one read as it is) or
// far past the rest once indexed the rate plot's bins below zero ("index
// out of range [-400]"): every plot draws.
func TestPlotsTakeTimesOutsideTheRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times []int64
	}{
		{"below zero", []int64{-5_000_000_000, -4_000_000_000, 100, 200}},
		{"the least time", []int64{-1 << 63, -1 << 62, 0, 1}},
		{"all below zero", []int64{-300, -200, -100, -50}},
		{"the greatest time", []int64{0, 1, 1<<63 - 2, 1<<63 - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ops []history.Op
			for i, at := range tc.times {
				typ, f := history.Invoke, history.Acquire
				if i%2 == 1 {
					typ = history.OK
				}
				if i >= 2 {
					f = history.Release
				}
				ops = append(ops, history.Op{Index: int64(i), Time: at, Process: 0, Type: typ, F: f, Key: "k0"})
			}
			if _, err := ratePNG(ops, "h"); err != nil {
				t.Fatalf("rate: %v", err)
			}
			res := &checker.Results{Valid: checker.Unknown}
			if err := WriteRun(context.Background(), t.TempDir(), ops, res, RunInfo{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFilesRenderedAtOnce: a report renders at most as many files at once
// as Go has processors (more would not finish sooner, and each plot holds
// its images while it is drawn), and renders them all.
func TestFilesRenderedAtOnce(t *testing.T) {
	dir := t.TempDir()
	w := &fileWriter{ctx: context.Background(), dir: dir}
	const files = 12
	var running, most atomic.Int32
	started, release := make(chan struct{}, files), make(chan struct{})
	for i := range files {
		w.write(fmt.Sprintf("f%d.txt", i), func() ([]byte, error) {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			started <- struct{}{}
			<-release
			running.Add(-1)
			return []byte("x"), nil
		})
	}
	for range files {
		<-started
		for range 100 { // let the others start, if they may
			runtime.Gosched()
		}
		release <- struct{}{}
	}
	if err := w.err(); err != nil {
		t.Fatal(err)
	}
	if m, limit := most.Load(), int32(runtime.GOMAXPROCS(0)); m > limit {
		t.Errorf("%d files rendered at once, with %d processors", m, limit)
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "f*.txt")); len(got) != files {
		t.Errorf("%d files written, want %d", len(got), files)
	}
}
