package history_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// TestProcBackground: an op the lock runs in the background (an extend)
// never holds the process's own work back. The process's next op (write,
// release, lost) does not wait for it — shown by a context already ended,
// which would fail any wait — but ends it as info, and its completion,
// when it comes, is not recorded. An extend completed before the process
// goes on is recorded as it came; an extend waits for the process's own
// op outstanding. The history keeps one op at a time per process.
func TestProcBackground(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	extend := history.Op{F: history.Extend, Key: "k0"}
	extendOK := history.Op{Type: history.OK, F: history.Extend, Key: "k0", LeaseMS: history.Int64(1000)}
	cases := []struct {
		name string
		run  func(t *testing.T, p *history.Proc)
		want []string // type/f of each op, with an extend's error when info
	}{
		{"the write goes on while the extend is open", func(t *testing.T, p *history.Proc) {
			b, err := p.InvokeBackground(live, extend)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Invoke(ended, history.Op{F: history.Write, Key: "k0"}); err != nil {
				t.Fatalf("the write waited for the extend: %v", err)
			}
			if _, err := b.Complete(extendOK); !errors.Is(err, history.ErrSuperseded) {
				t.Errorf("the extend's late completion: %v, want ErrSuperseded", err)
			}
			if by, _, ok := b.Superseded(); !ok || by != history.Write {
				t.Errorf("Superseded: %q %v, want write true", by, ok)
			}
			mustComplete(t, p, history.Op{Type: history.OK, F: history.Write, Key: "k0"})
		}, []string{"invoke extend", "info extend: " + history.SupersededError(history.Write), "invoke write", "ok write"}},
		{"a lost goes on while the extend is open", func(t *testing.T, p *history.Proc) {
			b, err := p.InvokeBackground(live, extend)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Instant(ended, history.Op{F: history.Lost, Key: "k0"}); err != nil {
				t.Fatalf("the lost waited for the extend: %v", err)
			}
			if _, err := b.Complete(extendOK); !errors.Is(err, history.ErrSuperseded) {
				t.Errorf("the extend's late completion: %v, want ErrSuperseded", err)
			}
		}, []string{"invoke extend", "info extend: " + history.SupersededError(history.Lost), "invoke lost", "ok lost"}},
		{"an extend completed in time is recorded", func(t *testing.T, p *history.Proc) {
			b, err := p.InvokeBackground(live, extend)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Complete(extendOK); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Complete(extendOK); !errors.Is(err, history.ErrSuperseded) {
				t.Errorf("a second completion: %v, want ErrSuperseded", err)
			}
			if _, err := p.Invoke(ended, history.Op{F: history.Release, Key: "k0"}); err != nil {
				t.Fatal(err)
			}
			mustComplete(t, p, history.Op{Type: history.OK, F: history.Release, Key: "k0"})
		}, []string{"invoke extend", "ok extend", "invoke release", "ok release"}},
		{"an extend waits for the process's own op", func(t *testing.T, p *history.Proc) {
			if _, err := p.Invoke(live, history.Op{F: history.Read, Key: "k0"}); err != nil {
				t.Fatal(err)
			}
			if _, err := p.InvokeBackground(ended, extend); !errors.Is(err, context.Canceled) {
				t.Fatalf("the extend did not wait for the read: %v", err)
			}
			started := make(chan *history.BackgroundOp)
			go func() {
				b, err := p.InvokeBackground(live, extend)
				if err != nil {
					t.Error(err)
				}
				started <- b
			}()
			mustComplete(t, p, history.Op{Type: history.OK, F: history.Read, Key: "k0", Value: history.IntValue(1)})
			b := <-started
			if _, err := b.Complete(extendOK); err != nil {
				t.Fatal(err)
			}
		}, []string{"invoke read", "ok read", "invoke extend", "ok extend"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := history.NewRecorder(nil, history.RecorderOptions{})
			tc.run(t, rec.Proc(0))
			ops := rec.History()
			var got []string
			for _, op := range ops {
				s := fmt.Sprintf("%s %s", op.Type, op.F)
				if op.F == history.Extend && op.Type == history.Info {
					s += ": " + op.Error
				}
				got = append(got, s)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("history:\n got %q\nwant %q", got, tc.want)
			}
			if err := history.Validate(context.Background(), ops); err != nil {
				t.Errorf("history: %v", err)
			}
		})
	}
}

func mustComplete(t *testing.T, p *history.Proc, op history.Op) {
	t.Helper()
	if _, err := p.Complete(op); err != nil {
		t.Fatal(err)
	}
}
