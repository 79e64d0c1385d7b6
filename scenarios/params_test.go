package scenarios_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/scenarios"
)

// TestStepKeysBelongToTheFault: a step's keys besides fault, at, for and
// on are the fault's own, decoded strictly by it: a key another fault
// takes is refused with the file, the line and the key, as an unknown
// key is.
func TestStepKeysBelongToTheFault(t *testing.T) {
	const head = "name: x\nbackend: redis-token\nnemesis:\n  script:\n"
	tests := []struct {
		name, step string
		line       int    // 0: accepted
		has        string // the refusal names this
	}{
		{"pause with latency", "    - fault: pause\n      process: 0\n      on: read\n      latency: 400ms\n      for: 2.5s\n", 8, `pause takes no "latency" (it takes: process)`},
		{"pause with topology", "    - fault: pause\n      process: 0\n      topology: ring\n      on: read\n      for: 2.5s\n", 7, `pause takes no "topology"`},
		{"pause with jump", "    - fault: pause\n      jump: 5s\n      process: 0\n      for: 2.5s\n", 6, `pause takes no "jump"`},
		{"pause with clients", "    - fault: pause\n      process: 0\n      clients: [1]\n      for: 1s\n", 7, `pause takes no "clients"`},
		{"kill with rate", "    - fault: kill\n      servers: [A]\n      rate: 2\n      for: 0s\n", 7, `kill takes no "rate" (it takes: process, servers)`},
		{"second step", "    - fault: pause\n      process: 0\n      for: 1s\n    - fault: latency\n      latency: 1s\n      jump: 1s\n      for: 1s\n", 10, `script step 2: latency takes no "jump"`},
		{"a key twice", "    - fault: pause\n      process: 0\n      process: 1\n      for: 1s\n", 7, `"process" twice`},
		{"bad value of the fault's", "    - fault: latency\n      latency: soon\n      for: 1s\n", 6, `"soon"`},
		{"pause", "    - fault: pause\n      process: 0\n      on: read\n      for: 2.5s\n", 0, ""},
		{"partition ring", "    - fault: partition\n      topology: ring\n      direction: downstream\n      at: 1s\n      for: 1s\n", 0, ""},
		{"clock jump", "    - fault: clock\n      servers: [A]\n      jump: -5s\n      on: acquire\n      for: 100ms\n", 0, ""},
		{"latency", "    - fault: latency\n      process: 1\n      clients: [0]\n      latency: 400ms\n      jitter: 0\n      for: 1s\n", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenarios.Parse([]byte(head+tc.step), "f.yaml")
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(s.Nemesis.Script) == 0 || s.Nemesis.Script[0].Params == nil {
					t.Fatalf("no params decoded: %+v", s.Nemesis.Script)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", s.Nemesis.Script)
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) is false", err)
			}
			m := errLine.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("error %q is not one line of the form f.yaml:<line>: invalid scenario: <problem>", err)
			}
			if m[1] != strconv.Itoa(tc.line) {
				t.Errorf("error %q names line %s, want %d", err, m[1], tc.line)
			}
			if !strings.Contains(m[2], tc.has) {
				t.Errorf("error %q does not say %q", err, tc.has)
			}
		})
	}
}

// TestBuiltinsLoadWithTheirPlan: every built-in scenario loads unchanged,
// and the plan line run.log shows for its steps reads as it always has.
func TestBuiltinsLoadWithTheirPlan(t *testing.T) {
	plans := map[string][]string{
		"kleppmann-pause": {"pause process 0 on read for 2.5s"},
		"renew-pause":     {"pause process 0 on read after 1s for 2.5s"},
		"inflight-delay":  {"latency process 0, direction downstream, latency 1s at 0s for 1h0m0s"},
		"failover":        {"partition topology replication at 0s for 1h0m0s", "failover forced on acquire for 5s"},
		"failover-leader": {"kill process 0, servers [leader] on acquire for 2.5s"},
		"pg-terminate":    {"terminate process 0 on read for 0s"},
		"lost-reply":      {"lost-reply process 1 once on write for 200ms", "lost-reply process 0 on release for 100ms"},
		"redlock-clock-jump": {
			"partition process 0, servers [D E], topology cut at 0s for 1h0m0s",
			"partition process 1, servers [A B], topology cut at 0s for 1h0m0s",
			"partition process 1, topology isolate-client at 0s for 2s",
			"clock process 0, servers [C], jump 12s on acquire for 100ms",
		},
		"redlock-restart-delayed": {
			"partition process 0, servers [D E], topology cut at 0s for 1h0m0s",
			"partition process 1, servers [A B], topology cut at 0s for 1h0m0s",
			"partition process 1, topology isolate-client at 0s for 500ms",
			"kill process 0, servers [C] on acquire for 2.5s",
		},
	}
	names := scenarios.BuiltinNames()
	if len(names) < len(plans) {
		t.Fatalf("BuiltinNames() = %v", names)
	}
	for _, name := range names {
		s, err := scenarios.Builtin(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want, ok := plans[name]
		if !ok {
			continue
		}
		var got []string
		for _, st := range s.NemesisSchedule().Script {
			got = append(got, st.String())
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s plan:\n got %q\nwant %q", name, got, want)
		}
	}
}
