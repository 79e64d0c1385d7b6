package workload

import (
	"context"
	"errors"
	"testing"
	"time"
)

// requestKind makes a request's context the way a client loop does (ours)
// or the way it did (context.WithTimeout): opTimer is held to the second.
type requestKind struct {
	name string
	// open prepares a client under parent; start and end bracket one
	// request; close ends the client.
	open func(parent context.Context) (start func(d time.Duration) context.Context, end func(context.Context), close func())
}

var requestKinds = []requestKind{
	{"context.WithTimeout", func(parent context.Context) (func(time.Duration) context.Context, func(context.Context), func()) {
		var cancel context.CancelFunc
		return func(d time.Duration) context.Context {
				var ctx context.Context
				ctx, cancel = context.WithTimeout(parent, d)
				return ctx
			}, func(context.Context) { cancel() },
			func() {}
	}},
	{"opTimer", func(parent context.Context) (func(time.Duration) context.Context, func(context.Context), func()) {
		o := newOpTimer(parent)
		return o.start, o.end, o.close
	}},
}

type ctxKey struct{}

// seen is what a library can see of a request's context once it ended.
type seen struct {
	err, cause error
}

func observe(ctx context.Context) seen {
	<-ctx.Done()
	return seen{ctx.Err(), context.Cause(ctx)}
}

// TestRequestContextIsWithTimeout holds the client loop's request context
// (opTimer) to context.WithTimeout's: case by case, what a library sees —
// its deadline, values, when it ends and with what error and cause, and
// the contexts and AfterFuncs it derives from it — is the same.
func TestRequestContextIsWithTimeout(t *testing.T) {
	cause := errors.New("the run was interrupted")
	cases := []struct {
		name string
		// run makes requests through start/end under parent (which
		// cancel ends) and returns what was seen.
		run  func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), cancel context.CancelCauseFunc) seen
		want seen
	}{
		{"deadline", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), _ context.CancelCauseFunc) seen {
			before := time.Now()
			ctx := start(20 * time.Millisecond)
			defer end(ctx)
			dl, ok := ctx.Deadline()
			if !ok || dl.Before(before.Add(20*time.Millisecond)) || dl.After(time.Now().Add(20*time.Millisecond)) {
				t.Errorf("deadline %v (%v), want 20ms from the start", dl, ok)
			}
			if ctx.Err() != nil {
				t.Errorf("err %v before the deadline", ctx.Err())
			}
			if v := ctx.Value(ctxKey{}); v != "run" {
				t.Errorf("value %v, want the parent's", v)
			}
			s := observe(ctx)
			if time.Now().Before(dl) {
				t.Errorf("ended before its deadline")
			}
			return s
		}, seen{context.DeadlineExceeded, context.DeadlineExceeded}},
		{"ended by its request", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), _ context.CancelCauseFunc) seen {
			ctx := start(time.Hour)
			end(ctx)
			return observe(ctx)
		}, seen{context.Canceled, context.Canceled}},
		{"ended before Done was asked", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), _ context.CancelCauseFunc) seen {
			ctx := start(time.Hour)
			end(ctx)
			if ctx.Err() == nil {
				t.Error("no error once ended")
			}
			return observe(ctx)
		}, seen{context.Canceled, context.Canceled}},
		{"run ended", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), cancel context.CancelCauseFunc) seen {
			ctx := start(time.Hour)
			defer end(ctx)
			cancel(cause)
			// Seen at once, as a child of a cancelCtx sees it.
			if ctx.Err() == nil {
				t.Error("Err nil right after the run ended")
			}
			return observe(ctx)
		}, seen{context.Canceled, cause}},
		{"run ended before the request", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), cancel context.CancelCauseFunc) seen {
			cancel(cause)
			ctx := start(time.Hour)
			defer end(ctx)
			return observe(ctx)
		}, seen{context.Canceled, cause}},
		{"a later request outlives an earlier one's deadline", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), _ context.CancelCauseFunc) seen {
			first := start(30 * time.Millisecond)
			firstDL, _ := first.Deadline()
			end(first)
			// The next one starts later, so its deadline is later.
			for !time.Now().After(firstDL.Add(-15 * time.Millisecond)) {
				time.Sleep(time.Millisecond)
			}
			ctx := start(30 * time.Millisecond)
			defer end(ctx)
			dl, _ := ctx.Deadline()
			s := observe(ctx)
			if time.Now().Before(dl) {
				t.Errorf("ended %v before its deadline (the earlier request's was %v)", time.Until(dl), firstDL.Sub(dl))
			}
			return s
		}, seen{context.DeadlineExceeded, context.DeadlineExceeded}},
		{"many requests, the last one times out", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), _ context.CancelCauseFunc) seen {
			for range 1000 {
				ctx := start(time.Millisecond)
				if ctx.Err() != nil && time.Until(deadlineOf(ctx)) > 0 {
					t.Fatalf("err %v before the deadline", ctx.Err())
				}
				end(ctx)
			}
			ctx := start(10 * time.Millisecond)
			defer end(ctx)
			return observe(ctx)
		}, seen{context.DeadlineExceeded, context.DeadlineExceeded}},
		{"derived context ends with it", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), _ context.CancelCauseFunc) seen {
			ctx := start(20 * time.Millisecond)
			defer end(ctx)
			derived, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			if dl, _ := derived.Deadline(); !dl.Equal(deadlineOf(ctx)) {
				t.Errorf("derived deadline %v, want its parent's %v", dl, deadlineOf(ctx))
			}
			return observe(derived)
		}, seen{context.DeadlineExceeded, context.DeadlineExceeded}},
		{"derived context when the run ends", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), cancel context.CancelCauseFunc) seen {
			ctx := start(time.Hour)
			defer end(ctx)
			derived, dcancel := context.WithCancel(ctx)
			defer dcancel()
			cancel(cause)
			return observe(derived)
		}, seen{context.Canceled, cause}},
		{"derived from an ended one", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), _ context.CancelCauseFunc) seen {
			ctx := start(time.Hour)
			end(ctx)
			derived, dcancel := context.WithCancel(ctx)
			defer dcancel()
			if derived.Err() == nil {
				t.Error("derived from an ended context, not ended")
			}
			return observe(derived)
		}, seen{context.Canceled, context.Canceled}},
		{"AfterFunc runs once it ends; a stopped one never", func(t *testing.T, start func(time.Duration) context.Context, end func(context.Context), _ context.CancelCauseFunc) seen {
			ctx := start(time.Hour)
			ran := make(chan struct{})
			context.AfterFunc(ctx, func() { close(ran) })
			stopped := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
			if !stopped() {
				t.Error("stop of a pending AfterFunc reported false")
			}
			if stopped() {
				t.Error("second stop reported true")
			}
			end(ctx)
			<-ran
			after := make(chan struct{})
			stop := context.AfterFunc(ctx, func() { close(after) })
			<-after
			if stop() {
				t.Error("stop after it ran reported true")
			}
			return observe(ctx)
		}, seen{context.Canceled, context.Canceled}},
	}
	for _, tc := range cases {
		for _, k := range requestKinds {
			t.Run(tc.name+"/"+k.name, func(t *testing.T) {
				t.Parallel()
				parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "run"))
				defer cancel(nil)
				start, end, closeIt := k.open(parent)
				defer closeIt()
				got := tc.run(t, start, end, cancel)
				if got.err != tc.want.err || got.cause != tc.want.cause {
					t.Errorf("err %v, cause %v; want %v, %v", got.err, got.cause, tc.want.err, tc.want.cause)
				}
			})
		}
	}
}

func deadlineOf(ctx context.Context) time.Time {
	dl, _ := ctx.Deadline()
	return dl
}

// TestRequestContextDerivesWithoutGoroutines: a context a library derives
// from a request's registers with it (AfterFunc), as with a standard
// parent, rather than costing a goroutine each; and unregisters when it
// ends first.
func TestRequestContextDerivesWithoutGoroutines(t *testing.T) {
	o := newOpTimer(context.Background())
	defer o.close()
	ctx := o.start(time.Hour)
	defer o.end(ctx)
	c := ctx.(*opCtx)
	derived, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	n := len(c.funcs)
	c.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d registrations after deriving, want 1", n)
	}
	cancel()
	<-derived.Done()
	c.mu.Lock()
	n = len(c.funcs)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d registrations after the derived one ended, want 0", n)
	}
}

// TestRequestContextFallsBack: under a parent with an earlier deadline
// (not a client loop's case), a request gets the standard context.
func TestRequestContextFallsBack(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := newOpTimer(parent)
	defer o.close()
	ctx := o.start(time.Hour)
	if _, ok := ctx.(*opCtx); ok {
		t.Fatal("an opCtx under a parent whose deadline is earlier")
	}
	if dl, _ := ctx.Deadline(); !dl.Equal(deadlineOf(parent)) {
		t.Errorf("deadline %v, want the parent's %v", dl, deadlineOf(parent))
	}
	o.end(ctx)
	if ctx.Err() != context.Canceled {
		t.Errorf("err %v after end, want Canceled", ctx.Err())
	}
}
