package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
)

// doubleGrant is a history in which processes 0 and 1 hold k0 at once while
// both leases are valid.
const doubleGrant = `{"index":0,"time":100,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":200,"process":0,"type":"ok","f":"acquire","key":"k0","lease_ms":1000}
{"index":2,"time":300,"process":1,"type":"invoke","f":"acquire","key":"k0"}
{"index":3,"time":400,"process":1,"type":"ok","f":"acquire","key":"k0","lease_ms":1000}
`

// analyzeText stores history (and scenario.yaml, when given) in a new
// directory and analyzes it with every checker.
func analyzeText(t *testing.T, hist, scenario string, opt Options) (*Outcome, []string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(hist), 0o644); err != nil {
		t.Fatal(err)
	}
	if scenario != "" {
		if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(scenario), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var warned []string
	out, err := Analyze(context.Background(), dir, opt, func(s string) { warned = append(warned, s) })
	return out, warned, err
}

// TestAnalyzeRefusesBrokenContract: an op the checkers cannot judge is bad
// input naming what is wrong, never a crash, never filed under another name.
func TestAnalyzeRefusesBrokenContract(t *testing.T) {
	for _, tc := range []struct {
		name, extra, want string
	}{
		{"type in capitals", `{"index":4,"time":500,"process":1,"type":"OK","f":"release","key":"k0"}`, `type "OK"`},
		{"bogus type", `{"index":4,"time":500,"process":1,"type":"bogus","f":"release","key":"k0"}`, `type "bogus"`},
		{"no type", `{"index":4,"time":500,"process":1,"f":"release","key":"k0"}`, `"type"`},
		{"no f", `{"index":4,"time":500,"process":1,"type":"invoke","key":"k0"}`, `"f"`},
		{"no time, named (not time going backwards)", `{"index":4,"process":1,"type":"invoke","f":"release","key":"k0"}`, `line 5: breaks the history contract: no "time"`},
		{"no process", `{"index":4,"time":500,"type":"invoke","f":"release","key":"k0"}`, `no "process"`},
		{"bad type names its line", `{"index":4,"time":500,"process":1,"type":"OK","f":"release","key":"k0"}`, `line 5`},
		{"acquire without a key", `{"index":4,"time":500,"process":2,"type":"invoke","f":"acquire"}`, `no "key"`},
		{"a string where a value belongs", `{"index":4,"time":500,"process":0,"type":"invoke","f":"write","key":"k0","value":"5"}`, "not an integer"},
		{"a string where a number belongs", `{"index":4,"time":"500","process":0,"type":"invoke","f":"write","key":"k0","value":5}`, "line 5"},
		{"time backwards (checked, an ok before its invoke would misjudge)", `{"index":4,"time":50,"process":1,"type":"invoke","f":"release","key":"k0"}`, "line 5: breaks the history contract: time goes backwards (50 after 400)"},
		{"time below zero", `{"index":4,"time":-5,"process":1,"type":"invoke","f":"release","key":"k0"}`, "line 5: breaks the history contract: time -5 is below zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := analyzeText(t, doubleGrant+tc.extra+"\n", "", Options{})
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("want bad input (exit 254), got %v (outcome %v)", err, out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestAnalyzeWarnsAndStillChecks: a rule the checkers can work around is a
// warning, listed in results.json, and the verdict stands.
func TestAnalyzeWarnsAndStillChecks(t *testing.T) {
	for _, tc := range []struct {
		name, hist, want string
		valid            checker.Validity
	}{
		{"process below -1", doubleGrant + `{"index":4,"time":500,"process":-7,"type":"invoke","f":"release","key":"k0"}` + "\n", "process -7", checker.Invalid},
		{"invoke over an outstanding op", `{"index":0,"time":100,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":200,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":2,"time":300,"process":0,"type":"ok","f":"acquire","key":"k0","lease_ms":1000}
`, "outstanding", checker.Valid},
		{"nemesis op that is not info", doubleGrant + `{"index":4,"time":500,"process":-1,"type":"invoke","f":"start-pause"}` + "\n", "nemesis op start-pause has type invoke", checker.Invalid},
		{"index gap", strings.Replace(doubleGrant, `"index":3`, `"index":7`, 1), "index is 7", checker.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, warned, err := analyzeText(t, tc.hist, "", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if out.Results.Valid != tc.valid {
				t.Errorf("verdict %s, want %s", out.Results.Valid, tc.valid)
			}
			if !strings.Contains(strings.Join(warned, "\n"), tc.want) {
				t.Errorf("warnings %q do not say %q", warned, tc.want)
			}
			if !strings.Contains(strings.Join(out.Results.Warnings, "\n"), tc.want) || out.Results.WarningCount == 0 {
				t.Errorf("results.json warnings %q (count %d) do not say %q", out.Results.Warnings, out.Results.WarningCount, tc.want)
			}
			b, err := os.ReadFile(filepath.Join(out.Dir, "results.json"))
			if err != nil || !strings.Contains(string(b), `"warnings"`) {
				t.Errorf("results.json has no warnings: %v", err)
			}
		})
	}
}

// TestAnalyzeWarningsAreCapped: the first few warnings are printed one by
// one, then a count.
func TestAnalyzeWarningsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(doubleGrant)
	for i := 4; i < 30; i++ {
		b.WriteString(`{"index":` + strconv.Itoa(i) + `,"time":500,"process":-9,"type":"info","f":"x"}` + "\n")
	}
	out, warned, err := analyzeText(t, b.String(), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warned) != maxWarningLines+1 || !strings.Contains(warned[maxWarningLines], "more") {
		t.Errorf("want %d warnings and a count, got %q", maxWarningLines, warned)
	}
	if out.Results.WarningCount < 26 {
		t.Errorf("warning count %d, want every one counted", out.Results.WarningCount)
	}
}

// TestAnalyzeRefusesBadScenario: a scenario.yaml beside the history loads
// strictly; --checkers is the way round it.
func TestAnalyzeRefusesBadScenario(t *testing.T) {
	bad := "name: x\nbackend: redis-token\nbogus: 1\n"
	_, _, err := analyzeText(t, doubleGrant, bad, Options{})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "scenario.yaml:3") {
		t.Fatalf("want bad input naming scenario.yaml:3, got %v", err)
	}
	out, _, err := analyzeText(t, doubleGrant, bad, Options{Checkers: []string{"mutex"}})
	if err != nil {
		t.Fatalf("--checkers should analyze without the scenario: %v", err)
	}
	if out.Results.Valid != checker.Invalid || out.Results.Checkers.Linearizable != nil {
		t.Errorf("want only mutex, invalid; got %s with linearizable %v", out.Results.Valid, out.Results.Checkers.Linearizable)
	}
	if _, _, err := analyzeText(t, doubleGrant, "", Options{Checkers: []string{"nope"}}); !errors.Is(err, ErrBadInput) {
		t.Errorf("unknown checker: want bad input, got %v", err)
	}
}

// TestAnalyzeKilledRun: a history that ends before the run did (no final
// reads, a fault never healed) says so and is never valid.
func TestAnalyzeKilledRun(t *testing.T) {
	const killed = `{"index":0,"time":100,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":200,"process":0,"type":"ok","f":"acquire","key":"k0","lease_ms":1000}
{"index":2,"time":250,"process":-1,"type":"info","f":"start-pause","value":{"process":1,"ms":2500}}
{"index":3,"time":300,"process":0,"type":"invoke","f":"read","key":"k0"}
{"index":4,"time":400,"process":0,"type":"ok","f":"read","key":"k0","value":0}
{"index":5,"time":500,"process":0,"type":"invoke","f":"write","key":"k0","value":1}
{"index":6,"time":600,"process":0,"type":"ok","f":"write","key":"k0","value":1}
{"index":7,"time":700,"process":0,"type":"invoke","f":"release","key":"k0"}
{"index":8,"time":800,"process":0,"type":"ok","f":"release","key":"k0"}
`
	out, warned, err := analyzeText(t, killed, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Valid != checker.Unknown || !strings.Contains(out.Results.Note, "no final reads") {
		t.Errorf("got %s (%q), want unknown: no final reads", out.Results.Valid, out.Results.Note)
	}
	if !strings.Contains(strings.Join(warned, "\n"), "never healed") {
		t.Errorf("the unhealed pause is not reported: %q", warned)
	}
	// Without lost-update, nothing asked for needs the final reads.
	out, _, err = analyzeText(t, killed, "", Options{Checkers: []string{"mutex", "fencing"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Valid != checker.Valid {
		t.Errorf("mutex and fencing alone: got %s, want valid", out.Results.Valid)
	}
	// With them, it is judged as usual.
	whole := killed + `{"index":9,"time":900,"process":-1,"type":"info","f":"stop-pause","value":{"process":1}}
{"index":10,"time":1000,"process":0,"type":"invoke","f":"final-read","key":"k0"}
{"index":11,"time":1100,"process":0,"type":"ok","f":"final-read","key":"k0","value":1}
`
	out, warned, err = analyzeText(t, whole, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Valid != checker.Valid || len(warned) != 0 {
		t.Errorf("a whole history: got %s with warnings %q, want valid and none", out.Results.Valid, warned)
	}
}
