package shrink

import (
	"fmt"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/scenarios"
)

func TestWithClients(t *testing.T) {
	p := func(n int) *int { return &n }
	steps := func(ps ...nemesis.Params) []scenarios.Step {
		var out []scenarios.Step
		for _, x := range ps {
			f := map[string]string{"*nemesis.PauseParams": "pause", "*nemesis.PartitionParams": "partition", "*nemesis.ServerParams": "kill"}[fmt.Sprintf("%T", x)]
			out = append(out, scenarios.Step{Fault: f, Params: x, For: scenarios.Duration(1e9)})
		}
		return out
	}
	tests := []struct {
		name    string
		steps   []scenarios.Step
		clients int
		ok      bool
		want    string
	}{
		{"processes below n keep their numbers", steps(&nemesis.PauseParams{Proc: nemesis.Proc{Process: p(1)}}), 2, true,
			"- fault: pause\n  process: 1\n  for: 1s\n"},
		{"a process at n or above is renumbered", steps(&nemesis.PauseParams{Proc: nemesis.Proc{Process: p(3)}},
			&nemesis.PartitionParams{ClientSet: nemesis.ClientSet{Clients: []int{1, 3}}}), 2, true,
			"- fault: pause\n  process: 1\n  for: 1s\n- fault: partition\n  clients:\n    - 0\n    - 1\n  for: 1s\n"},
		{"more processes named than clients", steps(&nemesis.PartitionParams{ClientSet: nemesis.ClientSet{Clients: []int{0, 1, 2}}}), 2, false, ""},
		{"faults naming no process", steps(&nemesis.ServerParams{ServerSet: nemesis.ServerSet{Servers: []string{"A"}}}), 2, true,
			"- fault: kill\n  servers:\n    - A\n  for: 1s\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &candidate{steps: tc.steps, idx: make([]int, len(tc.steps)), clients: 4, keys: 1}
			got, ok := withClients(c, tc.clients)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			b, err := yaml.Marshal(scenarios.Script(got.steps))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("steps:\n%s\nwant:\n%s", b, tc.want)
			}
			if got.clients != tc.clients || c.clients != 4 {
				t.Errorf("clients %d (original %d), want %d (original untouched)", got.clients, c.clients, tc.clients)
			}
		})
	}
}
