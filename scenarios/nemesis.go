package scenarios

import (
	"fmt"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
	"github.com/locktorture/locktorture/nemesis"
)

// Step is one scripted nemesis step. A step's own keys are fault, at, on
// and for; every other key belongs to the fault, which decodes it
// strictly into its own params (nemesis.DecodeParams): a key the fault
// does not take is refused.
type Step struct {
	// Fault names the nemesis ("pause").
	Fault string
	// At is the offset from the run's start (or the earliest moment an
	// event-triggered step may fire).
	At Duration
	// On makes the step fire right after the next successful op of this
	// kind (acquire, read, write or release) of the fault's `process:`, or
	// of any client when it has none.
	On string
	// For is how long the fault lasts (for kill: how long the server stays
	// down; 0 restarts it at once).
	For Duration
	// Params are the fault's own keys (`process:`, `servers:`,
	// `latency:`, ...), of the type the fault's Params returns; nil is
	// the fault's defaults.
	Params nemesis.Params
}

// Script is a nemesis script: its steps are numbered from 1 in errors.
type Script []Step

// UnmarshalYAML decodes each step, the fault's keys by the fault.
func (sc *Script) UnmarshalYAML(n *yaml.Node) error {
	var items []yaml.Node
	if err := n.Decode(&items); err != nil {
		return err
	}
	out := make(Script, len(items))
	for i := range items {
		if err := out[i].decode(&items[i], i+1); err != nil {
			return err
		}
	}
	*sc = out
	return nil
}

// decode reads step number i from n. Errors begin "line N: ", as yaml's
// own do, and name the step.
func (st *Step) decode(n *yaml.Node, i int) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: script step %d is not a mapping (want fault: ..., for: ...)", n.Line, i)
	}
	rest := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
	seen := map[string]bool{}
	faultLine := n.Line
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		if seen[k.Value] {
			return fmt.Errorf("line %d: script step %d gives %q twice", k.Line, i, k.Value)
		}
		seen[k.Value] = true
		var err error
		switch k.Value {
		case "fault":
			err, faultLine = v.Decode(&st.Fault), v.Line
		case "at":
			err = v.Decode(&st.At)
		case "on":
			err = v.Decode(&st.On)
		case "for":
			err = v.Decode(&st.For)
		default:
			rest.Content = append(rest.Content, k, v)
		}
		if err != nil {
			return stepErr(i, err)
		}
	}
	if st.Fault == "" {
		return fmt.Errorf("line %d: script step %d needs `fault:` (see: locktorture list nemeses)", n.Line, i)
	}
	if _, err := nemesis.Lookup(st.Fault); err != nil {
		return fmt.Errorf("line %d: script step %d: %w", faultLine, i, err)
	}
	p, err := nemesis.DecodeParams(st.Fault, rest)
	if err != nil {
		return stepErr(i, err)
	}
	st.Params = p
	return nil
}

// stepErr names step i in err, unless err is yaml's list of type errors
// (which the decoder collects as they are).
func stepErr(i int, err error) error {
	if _, ok := err.(*yaml.TypeError); ok {
		return err
	}
	return fmt.Errorf("script step %d: %w", i, err)
}

// MarshalYAML writes the step as a file gives it: the fault's keys inline.
func (st Step) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v any) error {
		var kn, vn yaml.Node
		kn.SetString(key)
		if err := vn.Encode(v); err != nil {
			return err
		}
		n.Content = append(n.Content, &kn, &vn)
		return nil
	}
	if err := add("fault", st.Fault); err != nil {
		return nil, err
	}
	if st.Params != nil {
		var pn yaml.Node
		if err := pn.Encode(st.Params); err != nil {
			return nil, err
		}
		n.Content = append(n.Content, pn.Content...)
	}
	if st.At != 0 {
		if err := add("at", st.At); err != nil {
			return nil, err
		}
	}
	if st.On != "" {
		if err := add("on", st.On); err != nil {
			return nil, err
		}
	}
	return n, add("for", st.For)
}

// step is the step in the nemesis package's form.
func (st Step) step() nemesis.Step {
	return nemesis.Step{Fault: st.Fault, Params: st.Params, At: st.At.D(), On: st.On, Duration: st.For.D()}
}

// NemesisSchedule converts the scenario's plan to the nemesis package's form.
func (s *Scenario) NemesisSchedule() nemesis.Schedule {
	var sch nemesis.Schedule
	for _, st := range s.Nemesis.Script {
		sch.Script = append(sch.Script, st.step())
	}
	if r := s.Nemesis.Random; r != nil {
		sch.Random = &nemesis.Random{Faults: s.randomFaults(), Interval: r.Interval.D(), Min: r.Min.D(), Max: r.Max.D()}
	}
	return sch
}

// nemesisShape is what faults may ask of the run: clients, the backend's
// abilities and server kinds, the Redis setup.
func (s *Scenario) nemesisShape() nemesis.Shape {
	info, _, _ := backends.Lookup(s.Backend)
	shape := nemesis.Shape{Clients: s.Clients, Backend: s.Backend, Kinds: s.serverKinds(info), Lease: info.Lease,
		Sentinel: s.Redis == backends.RedisSentinel, External: s.Servers == cluster.ServersExternal, Uncontrolled: s.Uncontrolled}
	if slices.Contains(shape.Kinds, zookeeper.Kind) && s.members(zookeeper.Kind) > 1 && !shape.External {
		// The harness's members dial one another through links.
		shape.Members = s.members(zookeeper.Kind)
	}
	return shape
}

// validateNemesis checks the plan against the run's shape: each step
// (pointing at the key at fault), then the random mix.
func (s *Scenario) validateNemesis() error {
	shape := s.nemesisShape()
	for i, st := range s.Nemesis.Script {
		if err := st.step().Check(shape); err != nil {
			return &fieldError{field: "nemesis", path: []string{"script", strconv.Itoa(i), nemesis.ErrorKey(err)},
				msg: fmt.Sprintf("script step %d: %v", i+1, err)}
		}
	}
	if err := s.NemesisSchedule().Validate(shape); err != nil {
		return &fieldError{field: "nemesis", msg: err.Error()}
	}
	return nil
}

// allFaults, as the only fault of a random mix, stands for every fault
// that applies to the scenario's backend and setup.
const allFaults = "all"

// randomFaults expands a random mix of [all] into every fault that
// applies to the run.
func (s *Scenario) randomFaults() []string {
	r := s.Nemesis.Random
	if r == nil {
		return nil
	}
	if len(r.Faults) != 1 || r.Faults[0] != allFaults {
		return r.Faults
	}
	if _, _, err := backends.Lookup(s.Backend); err != nil {
		return nil
	}
	shape := s.nemesisShape()
	var out []string
	for _, n := range nemesis.List() {
		if nemesis.Applies(n.Name, shape) == nil {
			out = append(out, n.Name)
		}
	}
	return out
}
