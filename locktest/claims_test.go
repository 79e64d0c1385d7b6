package locktest

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/scenarios"
)

// results makes synthetic results: mutex's verdict (with stale holders or
// double grants), fencing's and lost-update's.
func results(mutex checker.Validity, stale, double int, fencing, lost checker.Validity) *checker.Results {
	cs := checker.Checkers{
		Mutex:        &checker.MutexResult{Valid: mutex, StaleHolders: stale, DoubleGrants: double, Count: stale + double},
		Linearizable: &checker.LinearizableResult{Valid: mutex},
		Fencing:      &checker.FencingResult{Valid: fencing},
		LostUpdate:   &checker.LostUpdateResult{Valid: lost},
	}
	return &checker.Results{Checkers: cs, Valid: cs.Verdict()}
}

func TestJudgeClaims(t *testing.T) {
	pause, err := scenarios.Builtin("kleppmann-pause")
	if err != nil {
		t.Fatal(err)
	}
	baseline, err := scenarios.Builtin("baseline")
	if err != nil {
		t.Fatal(err)
	}
	delay, err := scenarios.Builtin("inflight-delay")
	if err != nil {
		t.Fatal(err)
	}
	family, err := scenarios.Builtin("delay")
	if err != nil {
		t.Fatal(err)
	}
	V, I, U := checker.Valid, checker.Invalid, checker.Unknown
	for _, tc := range []struct {
		name  string
		claim Claim
		sc    *scenarios.Scenario
		res   *checker.Results
		want  string // "" met, else the start of why
	}{
		{"safe, valid under a pause", Safe, pause, results(V, 0, 0, V, V), ""},
		{"safe, stale holder", Safe, pause, results(I, 1, 0, V, I), `less safe than the claim "safe"`},
		{"stale possible, stale holder", StaleHolderPossible, pause, results(I, 1, 0, V, I), ""},
		{"stale possible, none seen", StaleHolderPossible, pause, results(V, 0, 0, V, V), `safer than the claim "stale holder possible"`},
		{"stale possible, double grant", StaleHolderPossible, pause, results(I, 0, 1, V, I), `less safe than the claim "stale holder possible": 1 double grant`},
		{"stale possible, no pause: safe expected", StaleHolderPossible, baseline, results(I, 1, 0, V, V), `less safe than the claim "stale holder possible"`},
		{"stale possible, baseline valid", StaleHolderPossible, baseline, results(V, 0, 0, V, V), ""},
		{"fenced, rejected stale write", FencedWrites, pause, results(I, 1, 0, V, V), ""},
		{"fenced, update lost", FencedWrites, pause, results(I, 1, 0, V, I), `less safe than the claim "fenced writes reject stale holders"`},
		{"stale possible, delay past the lease", StaleHolderPossible, delay, results(I, 1, 0, V, I), ""},
		{"stale possible, delay, none seen (it may not bite)", StaleHolderPossible, delay, results(V, 0, 0, V, V), ""},
		{"stale possible, delay, double grant", StaleHolderPossible, delay, results(I, 0, 1, V, I), `less safe than the claim "stale holder possible": 1 double grant`},
		{"safe, delay, stale holder", Safe, delay, results(I, 1, 0, V, I), `less safe than the claim "safe"`},
		{"stale possible, pause, none seen: the fault's name", StaleHolderPossible, pause, results(V, 0, 0, V, V), `safer than the claim "stale holder possible": expected invalid, got valid (mutex too) — a 2.5s pause, past the 1s lease`},
		{"stale possible, delay family, late grant refused", StaleHolderPossible, family, results(V, 0, 0, V, V), ""},
		{"stale possible, delay family, late grant taken", StaleHolderPossible, family, results(I, 1, 0, V, V), ""},
		{"fenced, delay family, late grant refused", FencedWrites, family, results(V, 0, 0, V, V), ""},
		{"fenced, delay family, late write rejected", FencedWrites, family, results(I, 1, 0, V, V), ""},
		{"safe, delay family, late grant refused", Safe, family, results(V, 0, 0, V, V), ""},
		{"safe, delay family, stale holder", Safe, family, results(I, 1, 0, V, V), `less safe than the claim "safe"`},
		{"undecided", Safe, baseline, results(U, 0, 0, V, V), "undecided"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := judge(tc.res, claimExpectation(tc.claim, tc.sc), tc.sc)
			if tc.want == "" {
				if !ok {
					t.Fatalf("not met: %s", why)
				}
				return
			}
			if ok || !strings.HasPrefix(why, tc.want) {
				t.Fatalf("met %v, why %q; want not met, %q...", ok, why, tc.want)
			}
		})
	}
}

func TestLikeExpectation(t *testing.T) {
	sc, err := scenarios.Builtin("kleppmann-fenced")
	if err != nil {
		t.Fatal(err)
	}
	e := likeExpectation("redis-fenced", sc)
	if ok, why := judge(results(checker.Invalid, 1, 0, checker.Valid, checker.Valid), e, sc); !ok {
		t.Errorf("kleppmann-fenced as redis-fenced expects: %s", why)
	}
	if ok, _ := judge(results(checker.Invalid, 1, 0, checker.Valid, checker.Invalid), e, sc); ok {
		t.Error("a lost update met redis-fenced's expectation")
	}
}

func TestShortDuration(t *testing.T) {
	for name, want := range map[string]string{"baseline": "1s", "kleppmann-pause": "2.6s", "renew-pause": "4.5s"} {
		sc, err := scenarios.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		d := min(shortDuration(sc), sc.Duration.D())
		if d.String() != want {
			t.Errorf("%s: short duration %s, want %s", name, d, want)
		}
	}
}

func TestDefaultScenarios(t *testing.T) {
	names, err := Suite{}.scenarioNames()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("redis: %v", names)
	for _, want := range []string{"baseline", "kleppmann-pause", "kleppmann-fenced", "renew-pause"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("default scenarios for a redis lock %v lack %s", names, want)
		}
	}
	for _, not := range []string{"failover", "redlock-clock-jump", "pg-pause", "chaos", "redis-py-baseline", "retry-release", "delay", "renew-partition"} {
		if strings.Contains(" "+strings.Join(names, " ")+" ", " "+not+" ") {
			t.Errorf("default scenarios for a redis lock %v hold %s", names, not)
		}
	}
	for kind, want := range map[string]string{"etcd": "baseline etcd-pause etcd-pause-fenced", "zookeeper": "baseline zk-pause zk-pause-fenced"} {
		names, err := Suite{Kinds: []string{kind}}.scenarioNames()
		if err != nil || strings.Join(names, " ") != want {
			t.Errorf("default scenarios for a %s lock: %v, %v; want %s", kind, names, err, want)
		}
	}
	if _, err := (Suite{Kinds: []string{"mysql"}}).scenarioNames(); err == nil {
		t.Error("an unknown kind of server was taken")
	}
}

// TestPastLeaseFollowsFaults: the fault a claim is judged by is the one
// that can leave a holder past its lease. A pause on a step of the
// critical section must make a stale holder; a delay past the lease, or a
// pause at a time the client may or may not hold the lock, may; a pause
// before anything is held (the delay family's client 1, held back), or
// after a release, cannot.
func TestPastLeaseFollowsFaults(t *testing.T) {
	type want struct {
		fault   string
		certain bool
	}
	for _, f := range scenarios.Families {
		for _, name := range scenarios.FamilyScenarios(f) {
			sc, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			w := map[string]want{
				"pause": {"a 3s pause", true},
				"delay": {"a 2.5s delay of a client's traffic", false},
			}[name]
			if fault, certain := pastLease(sc); fault != w.fault || certain != w.certain {
				t.Errorf("family %s, scenario %s: pastLease %q, certain %v; want %q, %v", f, name, fault, certain, w.fault, w.certain)
			}
		}
	}
	base := "name: x\nbackend: redis-token\nclients: 2\nkeys: 1\nttl: 1s\nduration: 5s\nnemesis:\n  script:\n"
	for step, w := range map[string]want{
		"    - {fault: pause, process: 0, on: write, for: 2s}\n":                                                           {"a 2s pause", true},
		"    - {fault: pause, process: 0, on: acquire, for: 2s}\n":                                                         {"a 2s pause", true},
		"    - {fault: pause, process: 0, at: 1s, for: 2s}\n":                                                              {"a 2s pause", false},
		"    - {fault: pause, process: 0, at: 0s, for: 2s}\n":                                                              {"", false},
		"    - {fault: pause, process: 0, on: release, for: 2s}\n":                                                         {"", false},
		"    - {fault: pause, process: 0, on: read, for: 500ms}\n":                                                         {"", false},
		"    - {fault: pause, process: 1, at: 0s, for: 3s}\n    - {fault: pause, process: 0, on: read, at: 1s, for: 2s}\n": {"a 2s pause", true},
	} {
		sc, err := scenarios.Parse([]byte(base+step), "x.yaml")
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if fault, certain := pastLease(sc); fault != w.fault || certain != w.certain {
			t.Errorf("%s: pastLease %q, certain %v; want %q, %v", strings.TrimSpace(step), fault, certain, w.fault, w.certain)
		}
	}
}
