package reports

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// syncBuffer is a bytes.Buffer safe for the progress ticker and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProgressCounts feeds the Kleppmann history: the overlap is counted
// live, as the mutex checker counts it afterwards.
func TestProgressCounts(t *testing.T) {
	var out syncBuffer
	p := NewProgress(&out, 0)
	defer p.Close()
	p.StartRun("kleppmann", 4*time.Second, true)
	ops := kleppmann()
	for _, op := range ops {
		p.Observe(op)
	}
	n, v := p.counts()
	if n != len(ops) {
		t.Errorf("ops %d, want %d", n, len(ops))
	}
	res := check(t, ops, "k", "b")
	if v != res.Checkers.Mutex.Count || v != 1 {
		t.Errorf("violations so far %d, want the mutex checker's %d", v, res.Checkers.Mutex.Count)
	}
	// Without overlap counting (a lock-free backend) nothing is a violation.
	p.StartRun("lock-free", time.Second, false)
	for _, op := range ops {
		p.Observe(op)
	}
	if _, v := p.counts(); v != 0 {
		t.Errorf("lock-free: %d violations counted", v)
	}
	p.EndRun()
	p.Observe(ops[0]) // after the run: not counted
	if n, _ := p.counts(); n != len(ops) {
		t.Errorf("an op after EndRun was counted")
	}
}

// TestProgressPlain: not a terminal, so plain lines, no escape sequences.
func TestProgressPlain(t *testing.T) {
	var out syncBuffer
	p := NewProgress(&out, time.Millisecond)
	p.SetCells(2, 5)
	p.StartRun("baseline / mutex", time.Second, true)
	for _, op := range kleppmann() {
		p.Observe(op)
	}
	fmt := p.Writer()
	fmt.Write([]byte("a log line\n"))
	p.Printf("cell done")
	// The ticker prints a status line every interval: wait for one.
	for !strings.Contains(out.String(), "overlap") {
		time.Sleep(10 * time.Millisecond)
	}
	p.Close()
	s := out.String()
	for _, w := range []string{"a log line\n", "cell done\n", "baseline / mutex: ", "32 ops", "1 overlap", "1 stale holder", "holds", "RSS ", "MB", "cells 2/5 done"} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	if strings.Contains(s, "\r") || strings.Contains(s, "\033") {
		t.Errorf("plain output has terminal control characters: %q", s)
	}
	var nilp *Progress // quiet: every method does nothing
	nilp.StartRun("x", 0, true)
	nilp.Observe(history.Op{})
	nilp.Printf("x")
	nilp.Close()
}

// TestProgressBar draws the terminal bar into a buffer.
func TestProgressBar(t *testing.T) {
	var out syncBuffer
	p := &Progress{w: &out, tty: true}
	p.StartRun("baseline / mutex", 2*time.Second, true)
	p.SetCells(1, 3)
	for _, op := range kleppmann() {
		p.Observe(op)
	}
	p.mu.Lock()
	p.live.firstOp = time.Now().Add(-time.Second)
	p.drawLocked(time.Now())
	p.mu.Unlock()
	s := out.String()
	if !strings.HasPrefix(s, "\r\033[K") || !strings.Contains(s, "[############------------]") || !strings.Contains(s, "1 overlap · 1 stale") || !strings.Contains(s, "32 ops · ") || !strings.Contains(s, "cells 1/3") {
		t.Errorf("bar: %q", s)
	}
	p.Printf("line")
	if s := out.String(); !strings.Contains(s, "\r\033[Kline\n") {
		t.Errorf("a line should clear the bar first: %q", s)
	}
}
