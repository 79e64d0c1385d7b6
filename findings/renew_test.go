package findings_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/findings"
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
			if s := findings.Signal(ops, m.Violations[0]); !strings.Contains(s, tc.signal) {
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

// TestRenewFamiliesGrantClient0First: in renew-partition and renew-delay
// the fault waits for client 0's grant. On a loaded machine client 0's
// first acquire can be slow; here its requests are held 700ms from the
// start (as a busy ZooKeeper would answer), well past client 1's 300ms
// hold-back. Client 1 must still ask only once client 0's first acquire
// has ended (entry_wait past the timeout): client 0 is granted first, the
// fault happens, and the run gives a real verdict. With the default 100ms
// entry wait, zk-lock queued client 1 first, its 5s of work outlasted the
// run, the fault never came, and the run was unknown.
func TestRenewFamiliesGrantClient0First(t *testing.T) {
	testenv.Require(t, "java")
	slow := `
- fault: latency
  process: 0
  direction: upstream
  latency: 700ms
  at: 0s
  for: 500ms
`
	for _, fam := range []string{"renew-delay", "renew-partition"} {
		t.Run(fam, func(t *testing.T) {
			sc, err := scenarios.Builtin(fam)
			if err != nil {
				t.Fatal(err)
			}
			backend, inproc := "zk-lock", scenarios.ClientInproc
			if err := sc.Apply(scenarios.Overrides{Backend: &backend, ClientMode: &inproc}); err != nil {
				t.Fatal(err)
			}
			var extra scenarios.Script
			if err := yaml.Unmarshal([]byte(slow), &extra); err != nil {
				t.Fatal(err)
			}
			sc.Nemesis.Script = append(extra, sc.Nemesis.Script...)
			out, err := runner.Run(context.Background(), sc, runner.Options{Store: t.TempDir(), TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if out.Results.Valid == checker.Unknown || strings.Contains(out.Results.Note, "never happened") {
				t.Fatalf("%s: %v (%s):\n%s", fam, out.Results.Valid, out.Results.Note, out.Summary)
			}
			var first = -1
			for _, op := range readHistory(t, out.Dir) {
				if op.F == history.Acquire && op.Type == history.OK {
					first = op.Process
					break
				}
			}
			if first != 0 {
				t.Errorf("%s: the first grant went to client %d, not client 0:\n%s", fam, first, out.Summary)
			}
		})
	}
}
