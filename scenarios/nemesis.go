package scenarios

import (
	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/nemesis"
)

// NemesisSchedule converts the scenario's plan to the nemesis package's form.
func (s *Scenario) NemesisSchedule() nemesis.Schedule {
	var sch nemesis.Schedule
	for _, st := range s.Nemesis.Script {
		p := -1
		if st.Process != nil {
			p = *st.Process
		}
		t := nemesis.Target{Process: p, Clients: st.Clients, Servers: st.Servers, Topology: st.Topology, Direction: st.Direction,
			Latency: st.Latency.D(), Jitter: st.Jitter.D(), Jump: st.Jump.D(), Rate: st.Rate}
		sch.Script = append(sch.Script, nemesis.Step{Fault: st.Fault, Target: t, At: st.At.D(), On: st.On, Duration: st.For.D()})
	}
	if r := s.Nemesis.Random; r != nil {
		sch.Random = &nemesis.Random{Faults: s.randomFaults(), Interval: r.Interval.D(), Min: r.Min.D(), Max: r.Max.D()}
	}
	return sch
}

// AllFaults, as the only fault of a random mix, stands for every fault
// that applies to the scenario's backend and setup.
const AllFaults = "all"

// randomFaults expands a random mix of [all] into every fault that
// applies to the backend (failover only over Sentinel).
func (s *Scenario) randomFaults() []string {
	r := s.Nemesis.Random
	if r == nil {
		return nil
	}
	if len(r.Faults) != 1 || r.Faults[0] != AllFaults {
		return r.Faults
	}
	info, _, err := backends.Lookup(s.Backend)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range nemesis.List() {
		f, _ := nemesis.Lookup(n.Name)
		if a, ok := f.(nemesis.Applier); ok && a.Applies(s.Backend, info.ServerKinds(), info.Lease) != nil {
			continue
		}
		if n.Name == "failover" && s.Redis != backends.RedisSentinel {
			continue
		}
		out = append(out, n.Name)
	}
	return out
}
