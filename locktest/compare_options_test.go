package locktest

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestCompareOptions: what a Comparison asks of locktorture compare — the
// families (baseline first), the rows beside the lock's (by default the
// registry's built-in rows over its kinds, never exec, a program of the
// user's or a Run's in-process lock), the seeds (LOCKTEST_SEEDS wins) —
// and what it refuses, before any server starts.
func TestCompareOptions(t *testing.T) {
	newLock := func(context.Context, Config) (Lock, error) { return nil, nil }
	inproc := inprocBackend(Suite{New: newLock}, nextInproc()) // a Run's lock over redis: no built-in row
	for _, tc := range []struct {
		name       string
		c          Comparison
		seedsEnv   string
		wantErr    string
		scenarios  []string
		beside     []string // all of them, in order, when exact
		besideHas  []string
		besideNot  []string
		seeds      int
		wantRowSub string
	}{
		{name: "defaults", c: Comparison{New: newLock}, besideHas: []string{"redis-token", "redis-naive", "redlock", "redsync", "rueidislock"},
			besideNot: []string{"exec", "mutex", "etcd", "pg-advisory", inproc}, seeds: 1, wantRowSub: "TestCompareOptions-defaults"},
		{name: "families", c: Comparison{New: newLock, Families: []string{"pause", "failover"}, Seeds: 3},
			scenarios: []string{"baseline", "pause", "failover", "failover-leader"}, seeds: 3},
		{name: "etcd", c: Comparison{New: newLock, Kinds: []string{"etcd"}}, besideHas: []string{"etcd", "etcd-concurrency"},
			besideNot: []string{"redis-token", "zookeeper"}, seeds: 1},
		{name: "beside", c: Comparison{New: newLock, Beside: []string{"redis-token"}, Name: "mine"}, beside: []string{"redis-token"}, seeds: 1, wantRowSub: "mine"},
		{name: "alone", c: Comparison{New: newLock, Beside: []string{}}, beside: []string{}, seeds: 1},
		{name: "seeds env", c: Comparison{New: newLock, Seeds: 2}, seedsEnv: "4", seeds: 4},
		{name: "bad seeds env", c: Comparison{New: newLock}, seedsEnv: "many", wantErr: "want a number"},
		{name: "bad family", c: Comparison{New: newLock, Families: []string{"baseline"}}, wantErr: `unknown family "baseline"`},
		{name: "beside exec", c: Comparison{New: newLock, Beside: []string{"exec"}}, wantErr: `"exec" is no built-in backend`},
		{name: "beside unknown", c: Comparison{New: newLock, Beside: []string{"redis-tokn"}}, wantErr: `"redis-tokn" is no built-in backend`},
		{name: "bad name", c: Comparison{New: newLock, Name: "my lock"}, wantErr: `Comparison.Name "my lock"`},
		{name: "bad kind", c: Comparison{New: newLock, Kinds: []string{"mongo"}}, wantErr: `unknown kind of server "mongo"`},
		{name: "claims", c: Comparison{New: newLock, Families: []string{"pause"}, Claims: map[string]Claim{"baseline": Safe, "pause": StaleHolderPossible}}, seeds: 1},
		{name: "bad claims", c: Comparison{New: newLock, Families: []string{"pause"}, Claims: map[string]Claim{"kleppmann-pause": Safe}}, wantErr: `Comparison.Claims: "kleppmann-pause" is no scenario of this comparison (baseline, pause)`},
		{name: "bad like", c: Comparison{New: newLock, Like: "redis-tokn"}, wantErr: "Comparison.Like"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvSeeds, tc.seedsEnv)
			t.Setenv(EnvStore, t.TempDir())
			opt, row, err := tc.c.options(t, tc.c.suite())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantRowSub != "" && row != tc.wantRowSub {
				t.Errorf("row %q, want %q", row, tc.wantRowSub)
			}
			if !rowName.MatchString(row) {
				t.Errorf("row %q is no row name", row)
			}
			if opt.Backends[len(opt.Backends)-1] != row {
				t.Errorf("backends %v do not end with the row %s", opt.Backends, row)
			}
			beside := opt.Backends[:len(opt.Backends)-1]
			if tc.beside != nil && !slices.Equal(beside, tc.beside) {
				t.Errorf("beside %v, want %v", beside, tc.beside)
			}
			for _, b := range tc.besideHas {
				if !slices.Contains(beside, b) {
					t.Errorf("beside %v lacks %s", beside, b)
				}
			}
			for _, b := range tc.besideNot {
				if slices.Contains(beside, b) {
					t.Errorf("beside %v holds %s", beside, b)
				}
			}
			if tc.scenarios != nil && !slices.Equal(opt.Scenarios, tc.scenarios) {
				t.Errorf("scenarios %v, want %v", opt.Scenarios, tc.scenarios)
			}
			if opt.Scenarios[0] != "baseline" || !opt.Compare || opt.Seeds != tc.seeds || opt.Parallel != compareParallel {
				t.Errorf("scenarios %v, compare %v, seeds %d (want %d), parallel %d", opt.Scenarios, opt.Compare, opt.Seeds, tc.seeds, opt.Parallel)
			}
		})
	}
}

// TestChildID: a client process is told its call by LOCKTEST_CHILD (Run's)
// or by -locktest.child on its command line (Compare's).
func TestChildID(t *testing.T) {
	args := os.Args
	t.Cleanup(func() { os.Args = args })
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{want: ""},
		{env: "TestA#0", want: "TestA#0"},
		{args: []string{"-test.run=^TestB$", "-locktest.child=TestB#1"}, want: "TestB#1"},
		{args: []string{"--locktest.child=TestC#0"}, want: "TestC#0"},
		{args: []string{"-locktest.childish=x"}, want: ""},
	} {
		t.Setenv(envChild, tc.env)
		os.Args = append([]string{"x.test"}, tc.args...)
		if got := childID(); got != tc.want {
			t.Errorf("env %q, args %q: %q, want %q", tc.env, tc.args, got, tc.want)
		}
	}
}

// TestComparisonExpectation: what a comparison's row is judged against,
// family by family — Like's built-in expectation, else Claims', else
// Claim's, else none — and the expected verdict its cells carry.
func TestComparisonExpectation(t *testing.T) {
	stale, safe := StaleHolderPossible, Safe
	for _, tc := range []struct {
		name     string
		c        Comparison
		scenario string
		judged   bool
		want     string
	}{
		{name: "no claim", c: Comparison{}, scenario: "pause"},
		{name: "claims elsewhere", c: Comparison{Claims: map[string]Claim{"delay": Safe}}, scenario: "pause"},
		{name: "safe", c: Comparison{Claim: &safe}, scenario: "pause", judged: true, want: "valid"},
		{name: "stale certain", c: Comparison{Claim: &stale}, scenario: "pause", judged: true, want: "invalid"},
		{name: "stale maybe", c: Comparison{Claim: &stale}, scenario: "delay", judged: true, want: "valid or invalid"},
		{name: "stale, no fault past the lease", c: Comparison{Claim: &stale}, scenario: "baseline", judged: true, want: "valid"},
		{name: "claims win", c: Comparison{Claim: &stale, Claims: map[string]Claim{"pause": Safe}}, scenario: "pause", judged: true, want: "valid"},
		{name: "like", c: Comparison{Claim: &safe, Like: "pg-advisory"}, scenario: "pause", judged: true, want: "valid"},
		{name: "like redis-token", c: Comparison{Like: "redis-token"}, scenario: "pause", judged: true, want: "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := load(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := tc.c.expectation(sc)
			if ok != tc.judged || ok && expectedText(e) != tc.want {
				t.Errorf("judged %v, expected %q; want %v, %q", ok, expectedText(e), tc.judged, tc.want)
			}
		})
	}
}
