package findings

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// TestDocsListTheRegistry: docs/findings.md has one "## id" heading per
// finding of the registry, in its order, and no other.
func TestDocsListTheRegistry(t *testing.T) {
	b, err := os.ReadFile("../docs/findings.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)\s*$`).FindAllStringSubmatch(string(b), -1) {
		got = append(got, m[1])
	}
	if want := IDs(); !slices.Equal(got, want) {
		t.Errorf("docs/findings.md lists %v, the registry %v", got, want)
	}
}

// TestEveryFindingIsExpectedInvalid: each finding names a built-in
// scenario that applies to its backend and expects that backend's run to
// be invalid (the finding and the scenario's expectation agree) — or, for
// a finding against its library's claim, valid (the claim, kept as the
// expectation) — with the seeds and what it breaks stated.
func TestEveryFindingIsExpectedInvalid(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range All() {
		if seen[f.ID] {
			t.Errorf("%s: listed twice", f.ID)
		}
		seen[f.ID] = true
		if f.Library == "" || f.Breaks == "" || len(f.Seeds) == 0 || (f.Module == "") == (f.Package == "") {
			t.Errorf("%s: library %q, breaks %q, seeds %v, module %q, package %q", f.ID, f.Library, f.Breaks, f.Seeds, f.Module, f.Package)
		}
		sc, err := f.Load(0)
		if err != nil {
			t.Errorf("%s: %v", f.ID, err)
			continue
		}
		if sc.Backend != f.Backend || sc.Seed != f.Seeds[0] || !sc.Applies(f.Backend) {
			t.Errorf("%s: scenario %s runs %s seed %d (applies to %s: %v)", f.ID, sc.Name, sc.Backend, sc.Seed, f.Backend, sc.Applies(f.Backend))
		}
		want := "invalid"
		if f.AgainstClaim {
			// The scenario keeps the library's claim; the finding is
			// that runs contradict it.
			want = "valid"
		}
		if e := sc.Expected(f.Backend); e.Valid != want {
			t.Errorf("%s: scenario %s expects %q of %s, not %s (against its claim: %v)", f.ID, f.Scenario, e.Valid, f.Backend, want, f.AgainstClaim)
		}
		if s7, _ := f.Load(7); s7 == nil || s7.Seed != 7 {
			t.Errorf("%s: --seed 7 not applied", f.ID)
		}
	}
	if _, err := Lookup("no-such-finding"); err == nil || !strings.Contains(err.Error(), "etcd-22082") {
		t.Errorf("unknown id: %v", err)
	}
}

// TestReproduced: a finding reproduces on an invalid run only.
func TestReproduced(t *testing.T) {
	for v, want := range map[checker.Validity]bool{checker.Invalid: true, checker.Valid: false, checker.Unknown: false} {
		if got := Reproduced(&checker.Results{Valid: v}); got != want {
			t.Errorf("%v: %v", v, got)
		}
	}
	if Reproduced(nil) {
		t.Error("nil results reproduced")
	}
}

// TestSignal: the words for a stale holder's lost event after, and
// before, the later grant; and for a holder never told.
func TestSignal(t *testing.T) {
	ov := checker.Overlap{Key: "k0", Start: 2_000_000_000,
		Earlier: checker.Hold{Process: 0, Key: "k0", Start: 10_000_000}, Later: checker.Hold{Process: 1, Key: "k0"}}
	ops := []history.Op{
		{Process: 0, Type: history.OK, F: history.Acquire, Key: "k0", Time: 10_000_000},
		{Process: 1, Type: history.OK, F: history.Acquire, Key: "k0", Time: 2_000_000_000},
		{Process: 0, Type: history.Invoke, F: history.Lost, Key: "k0", Time: 2_490_000_000},
	}
	if got := Signal(ops, ov); !strings.Contains(got, "0.49s after client 1 was granted it") {
		t.Errorf("late: %q", got)
	}
	ops[2].Time = 1_900_000_000
	if got := Signal(ops, ov); !strings.Contains(got, "0.10s before") {
		t.Errorf("early: %q", got)
	}
	ops[2] = history.Op{Process: 0, Type: history.Invoke, F: history.Release, Key: "k0", Time: 3_000_000_000}
	if got := Signal(ops, ov); !strings.Contains(got, "never told client 0") || !strings.Contains(got, "1.00s after") {
		t.Errorf("never: %q", got)
	}
}

// TestOwnScenarioFiles: a finding with a scenario file of its own names a
// file in findings/scenarios (the path repro prints for run
// --scenario-file), whose scenario has the finding's Scenario as its name
// and is no built-in; every file there is some finding's.
func TestOwnScenarioFiles(t *testing.T) {
	used := map[string]bool{}
	for _, f := range All() {
		if f.File == "" {
			if f.ScenarioPath() != "" {
				t.Errorf("%s: a path %q without a file", f.ID, f.ScenarioPath())
			}
			continue
		}
		used[f.File] = true
		if _, err := os.Stat("../" + f.ScenarioPath()); err != nil {
			t.Errorf("%s: %v", f.ID, err)
		}
		if _, err := scenarios.Builtin(f.Scenario); err == nil {
			t.Errorf("%s: %s is also a built-in", f.ID, f.Scenario)
		}
		sc, err := f.Load(0)
		if err != nil {
			t.Errorf("%s: %v", f.ID, err)
		} else if sc.Name != f.Scenario {
			t.Errorf("%s: the file's scenario is %q, not %q", f.ID, sc.Name, f.Scenario)
		}
	}
	ents, err := os.ReadDir("scenarios")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !used[e.Name()] {
			t.Errorf("findings/scenarios/%s: no finding runs it", e.Name())
		}
	}
}
