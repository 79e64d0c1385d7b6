package findings

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

// TestRenewPartitionCatchesStaleHolder runs the renew-partition family for
// real on two watchdog locks. rueidislock's context is cancelled only when
// its extension, sent before the cut, times out a whole validity later:
// the run is invalid, a stale holder, and its lost event comes after
// client 1's grant. redis-renew's watchdog gives up at its first failed
// extension, before the key expires: valid, the lost event before client
// 1's grant. (A family that let either outcome through would fail one of
// the two.)
func TestRenewPartitionCatchesStaleHolder(t *testing.T) {
	testenv.Require(t, "redis-server")
	for _, tc := range []struct {
		backend string
		want    checker.Validity
		signal  string
	}{
		{"rueidislock", checker.Invalid, "after client 1 was granted it"},
		{"redis-renew", checker.Valid, ""},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			sc, err := scenarios.Builtin("renew-partition")
			if err != nil {
				t.Fatal(err)
			}
			inproc := scenarios.ClientInproc
			if err := sc.Apply(scenarios.Overrides{Backend: &tc.backend, ClientMode: &inproc}); err != nil {
				t.Fatal(err)
			}
			out, err := runner.Run(context.Background(), sc, runner.Options{Store: t.TempDir(), TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if out.Results.Valid != tc.want {
				t.Fatalf("%s: %v, want %v:\n%s", tc.backend, out.Results.Valid, tc.want, out.Summary)
			}
			ops := readHistory(t, out.Dir)
			var lost, granted int64 = -1, -1
			for _, op := range ops {
				if op.Process == 0 && op.F == history.Lost && op.Type == history.Invoke && lost < 0 {
					lost = op.Time
				}
				if op.Process == 1 && op.F == history.Acquire && op.Type == history.OK && granted < 0 {
					granted = op.Time
				}
			}
			if lost < 0 || granted < 0 {
				t.Fatalf("%s: lost at %d, client 1 granted at %d:\n%s", tc.backend, lost, granted, out.Summary)
			}
			if tc.want == checker.Valid {
				if lost > granted {
					t.Errorf("%s: valid, but its lost event (%d) came after client 1's grant (%d)", tc.backend, lost, granted)
				}
				return
			}
			m := out.Results.Checkers.Mutex
			if m == nil || m.StaleHolders == 0 || len(m.Violations) == 0 {
				t.Fatalf("%s: no stale holder: %+v", tc.backend, m)
			}
			if s := Signal(ops, m.Violations[0]); !strings.Contains(s, tc.signal) {
				t.Errorf("%s: signal %q, want %q", tc.backend, s, tc.signal)
			}
		})
	}
}

func readHistory(t *testing.T, dir string) []history.Op {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops, err := history.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}
