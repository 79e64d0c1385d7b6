package shrink

import (
	"fmt"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/scenarios"
)

// withClients is c on n clients. The processes its faults name keep their
// numbers when all are below n, else become 0, 1, ... in order; false
// when the faults name more than n processes.
func withClients(c *candidate, n int) (*candidate, bool) {
	var used []int
	for _, st := range c.steps {
		for _, p := range processes(st.Params) {
			if !slices.Contains(used, p) {
				used = append(used, p)
			}
		}
	}
	slices.Sort(used)
	if len(used) > n {
		return nil, false
	}
	remap := map[int]int{}
	renumber := len(used) > 0 && used[len(used)-1] >= n
	for i, p := range used {
		remap[p] = p
		if renumber {
			remap[p] = i
		}
	}
	d := c.clone()
	d.clients = n
	for i := range d.steps {
		p, err := remapParams(d.steps[i], remap)
		if err != nil {
			return nil, false
		}
		d.steps[i].Params = p
	}
	return d, true
}

// processes lists the client processes params name (`process:` and
// `clients:`).
func processes(p nemesis.Params) []int {
	n, err := paramsNode(p)
	if err != nil {
		return nil
	}
	var out []int
	walkProcs(n, func(v int) int { out = append(out, v); return v })
	return out
}

// remapParams renumbers the processes a step's params name.
func remapParams(st scenarios.Step, remap map[int]int) (nemesis.Params, error) {
	if st.Params == nil {
		return nil, nil
	}
	n, err := paramsNode(st.Params)
	if err != nil {
		return nil, err
	}
	walkProcs(n, func(v int) int {
		if w, ok := remap[v]; ok {
			return w
		}
		return v
	})
	return nemesis.DecodeParams(st.Fault, n)
}

func paramsNode(p nemesis.Params) (*yaml.Node, error) {
	var n yaml.Node
	if p == nil {
		return &yaml.Node{Kind: yaml.MappingNode}, nil
	}
	if err := n.Encode(p); err != nil {
		return nil, fmt.Errorf("shrink: params: %w", err)
	}
	return &n, nil
}

// walkProcs calls f on each process number in a params mapping and
// stores what it returns.
func walkProcs(n *yaml.Node, f func(int) int) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		var vals []*yaml.Node
		switch {
		case k == "process" && v.Kind == yaml.ScalarNode:
			vals = []*yaml.Node{v}
		case k == "clients" && v.Kind == yaml.SequenceNode:
			vals = v.Content
		}
		for _, x := range vals {
			if p, err := strconv.Atoi(x.Value); err == nil {
				x.Value = strconv.Itoa(f(p))
			}
		}
	}
}

// stepString describes a step as run.log's plan does.
func stepString(st scenarios.Step) string {
	return nemesis.Step{Fault: st.Fault, Params: st.Params, At: st.At.D(), On: st.On, Duration: st.For.D()}.String()
}
