package history

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// plainProc is Proc as it was before its channel was made only for a
// waiter: a channel made by every op and closed when it completes. It is
// the reference FuzzProcMatchesPlain holds Proc to.
type plainProc struct {
	r  *Recorder
	id int

	mu   sync.Mutex
	busy bool
	bg   *plainBackgroundOp
	free chan struct{}
}

type plainBackgroundOp struct {
	p          *plainProc
	invoked    Op
	superseded bool
	by         string
	at         int64
}

func (p *plainProc) take(ctx context.Context, f string) error {
	for {
		p.mu.Lock()
		if !p.busy {
			p.busy, p.free = true, make(chan struct{})
			p.mu.Unlock()
			return nil
		}
		if b := p.bg; b != nil {
			done := Op{Process: p.id, Type: Info, F: b.invoked.F, Key: b.invoked.Key, Error: SupersededError(f)}
			rec, err := p.r.Record(done)
			b.superseded, b.by, b.at = true, f, rec.Time
			p.bg = nil
			p.mu.Unlock()
			if err != nil {
				p.give()
			}
			return err
		}
		ch := p.free
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *plainProc) give() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy {
		p.busy, p.bg = false, nil
		close(p.free)
	}
}

func (p *plainProc) Invoke(ctx context.Context, op Op) (Op, error) {
	if err := p.take(ctx, op.F); err != nil {
		return op, err
	}
	op.Process, op.Type = p.id, Invoke
	done, err := p.r.Record(op)
	if err != nil {
		p.give()
	}
	return done, err
}

func (p *plainProc) Complete(op Op) (Op, error) {
	op.Process = p.id
	if op.Type == Invoke || op.Type == "" {
		op.Type = Info
	}
	done, err := p.r.Record(op)
	p.mu.Lock()
	if p.busy && p.bg == nil {
		p.busy = false
		close(p.free)
	}
	p.mu.Unlock()
	return done, err
}

func (p *plainProc) Instant(ctx context.Context, op Op) (Op, error) {
	if err := p.take(ctx, op.F); err != nil {
		return op, err
	}
	defer p.give()
	op.Process = p.id
	inv, done := op, op
	inv.Type, done.Type = Invoke, OK
	return p.r.recordPair(inv, done)
}

func (p *plainProc) InvokeBackground(ctx context.Context, op Op) (*plainBackgroundOp, error) {
	for {
		p.mu.Lock()
		if !p.busy {
			break
		}
		ch := p.free
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer p.mu.Unlock()
	op.Process, op.Type = p.id, Invoke
	rec, err := p.r.Record(op)
	if err != nil {
		return nil, err
	}
	b := &plainBackgroundOp{p: p, invoked: rec}
	p.busy, p.bg, p.free = true, b, make(chan struct{})
	return b, nil
}

func (b *plainBackgroundOp) Complete(op Op) (Op, error) {
	p := b.p
	op.Process = p.id
	if op.Type == Invoke || op.Type == "" {
		op.Type = Info
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.superseded {
		op.Time = p.r.Now()
		return op, fmt.Errorf("%w (its %s began at %s)", ErrSuperseded, b.by, time.Duration(b.at))
	}
	if p.bg != b {
		op.Time = p.r.Now()
		return op, fmt.Errorf("%w (it was completed already)", ErrSuperseded)
	}
	done, err := p.r.Record(op)
	p.busy, p.bg = false, nil
	close(p.free)
	return done, err
}

// procSteps are the calls FuzzProcMatchesPlain makes, one a byte.
var procSteps = []string{"invoke", "complete", "instant", "background", "complete-background", "complete-first-background", "wait-and-complete"}

// FuzzProcMatchesPlain drives a Proc and a plainProc through the same
// calls, one per byte of the input — Invoke, Complete, Instant,
// InvokeBackground, a background op's Complete (the latest's or the
// first's), and an Invoke that waits while another goroutine completes
// the op outstanding — and holds them to the same answers and the same
// history, times aside. A call that would wait for the process's op, but
// for the last kind, is made with a context already ended, so it returns
// at once with its error, having made its channel.
func FuzzProcMatchesPlain(f *testing.F) {
	for _, seed := range []string{"", "\x00\x01", "\x00\x00\x01\x01", "\x03\x00\x04\x01", "\x03\x02\x04", "\x00\x03\x01\x04\x05", "\x03\x04\x04\x00\x01", "\x06\x06\x01", "\x00\x06\x01\x03\x06\x01"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, steps []byte) {
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		newRec, plainRec := NewRecorder(nil, RecorderOptions{}), NewRecorder(nil, RecorderOptions{})
		p, q := newRec.Proc(3), &plainProc{r: plainRec, id: 3}
		var bgs []*BackgroundOp
		var plainBgs []*plainBackgroundOp
		answer := func(op Op, err error) string {
			return untimed(fmt.Sprintf("%s %s %s %v", op.Type, op.F, op.Error, err))
		}
		for i, c := range steps {
			op := Op{F: []string{Acquire, Read, Write, Release, Lost}[int(c)/len(procSteps)%5], Key: "k0"}
			var got, want string
			switch step := procSteps[int(c)%len(procSteps)]; step {
			case "invoke":
				got, want = answer(p.Invoke(ended, op)), answer(q.Invoke(ended, op))
			case "complete":
				op.Type = OK
				got, want = answer(p.Complete(op)), answer(q.Complete(op))
			case "instant":
				got, want = answer(p.Instant(ended, op)), answer(q.Instant(ended, op))
			case "background":
				op.F = Extend
				b, err := p.InvokeBackground(ended, op)
				pb, perr := q.InvokeBackground(ended, op)
				got, want = untimed(fmt.Sprint(b != nil, err)), untimed(fmt.Sprint(pb != nil, perr))
				if b != nil {
					bgs = append(bgs, b)
				}
				if pb != nil {
					plainBgs = append(plainBgs, pb)
				}
			case "complete-background", "complete-first-background":
				if len(bgs) == 0 || len(plainBgs) == 0 {
					got, want = fmt.Sprint(len(bgs)), fmt.Sprint(len(plainBgs))
					break
				}
				k, pk := len(bgs)-1, len(plainBgs)-1
				if step == "complete-first-background" {
					k, pk = 0, 0
				}
				op.F, op.Type = Extend, OK
				got, want = answer(bgs[k].Complete(op)), answer(plainBgs[pk].Complete(op))
			case "wait-and-complete":
				// An Invoke that waits (a live context) while another
				// goroutine completes the op outstanding, if any.
				got = waitAndComplete(p.Invoke, p.Complete, func() (busy, waited bool) {
					p.mu.Lock()
					defer p.mu.Unlock()
					return p.busy && p.bg == nil, p.free != nil
				}, op)
				want = waitAndComplete(q.Invoke, q.Complete, func() (busy, waited bool) {
					q.mu.Lock()
					defer q.mu.Unlock()
					// A plain process's channel is there all along: it
					// cannot tell whether the invoke waits yet.
					return q.busy && q.bg == nil, true
				}, op)
			}
			if got != want {
				t.Fatalf("step %d (%s): got %q, plain %q", i, procSteps[int(c)%len(procSteps)], got, want)
			}
		}
		got, want := newRec.History(), plainRec.History()
		if len(got) != len(want) {
			t.Fatalf("%d ops, plain %d", len(got), len(want))
		}
		for i := range got {
			got[i].Time, want[i].Time = 0, 0
			if g, w := fmt.Sprintf("%+v", got[i]), fmt.Sprintf("%+v", want[i]); g != w {
				t.Fatalf("op %d: %s, plain %s", i, g, w)
			}
		}
	})
}

// waitAndComplete invokes op with a live context; when the process has
// an op of its own outstanding, a goroutine completes it once the invoke
// waits for it (state's waited; a process that cannot tell completes it
// at once), which lets the invoke through: either way the history is the
// completion, then the invoke. It returns what the invoke answered.
func waitAndComplete(invoke func(context.Context, Op) (Op, error), complete func(Op) (Op, error), state func() (busy, waited bool), op Op) string {
	var wg sync.WaitGroup
	if busy, _ := state(); busy {
		wg.Go(func() {
			for {
				if _, waited := state(); waited {
					break
				}
				runtime.Gosched()
			}
			_, _ = complete(Op{Type: OK, F: "waited-on", Key: "k0"})
		})
	}
	done, err := invoke(context.Background(), op)
	wg.Wait()
	return untimed(fmt.Sprintf("%s %s %v", done.Type, done.F, err))
}

// beganAt is the time ErrSuperseded's message gives, which differs from
// one recorder to another.
var beganAt = regexp.MustCompile(`began at [^)]*\)`)

// untimed is s without the times in it.
func untimed(s string) string { return beganAt.ReplaceAllString(strings.TrimSpace(s), "began at T)") }
