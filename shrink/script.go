package shrink

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/scenarios"
)

// RecordedFault is one fault as a history recorded it, turned into the
// scripted step that repeats it.
type RecordedFault struct {
	// Step repeats the fault: its params from the recorded targets, at
	// the recorded time (or on the event that fired it), for as long as
	// it was planned to last.
	Step scenarios.Step
	// Start and End are the fault's window on the history's clock (End
	// == Start for an instant fault that was never undone).
	Start, End int64
	// Op is the history index of the op that started it.
	Op int64
}

// faultEvents says, for a fault name, which client events fired it in the
// original run (a random mix fires a pause on its target's read), so the
// script fires it on the same event. A nil map fires every step at its
// recorded time.
type faultEvents map[string][]string

// eventsOf returns the events that could have fired faults in sc: the
// `on:` of its script steps and, for a random mix, each fault's
// RandomEvent.
func eventsOf(sc *scenarios.Scenario) faultEvents {
	ev := faultEvents{}
	add := func(f, on string) {
		if on != "" && !slices.Contains(ev[f], on) {
			ev[f] = append(ev[f], on)
		}
	}
	for _, st := range sc.Nemesis.Script {
		add(st.Fault, st.On)
	}
	if r := sc.NemesisSchedule().Random; r != nil {
		for _, name := range r.Faults {
			if f, err := nemesis.Lookup(name); err == nil {
				if e, ok := f.(nemesis.RandomEventer); ok {
					add(name, e.RandomEvent())
				}
			}
		}
	}
	return ev
}

// fromHistory turns the nemesis ops of a history into scripted steps, one
// per fault, in the order they started: the fault's targets and
// parameters from its start op's value, `at:` its start time (in whole
// milliseconds), `for:` its planned length (the value's "ms", or the time
// to its stop op). A fault that events fires (see faultEvents) whose start
// came right after its process's event fires `on:` that event, at or
// after the event's time, as the original did. A nemesis op it cannot
// read is an error naming its index.
func fromHistory(ops []history.Op, events faultEvents) ([]RecordedFault, error) {
	var out []pendingFault
	open := map[string][]int{} // stop op name -> indexes into out, oldest first
	lastOf := map[int]int{}    // process -> index into ops of its last op
	lastClient := -1
	for i := range ops {
		op := &ops[i]
		if !op.IsNemesis() {
			lastOf[op.Process] = i
			lastClient = i
			continue
		}
		val := map[string]any{}
		if len(op.Value) > 0 && op.Value[0] == '{' {
			if err := json.Unmarshal(op.Value, &val); err != nil {
				return nil, fmt.Errorf("history op %d (%s): value: %w", op.Index, op.F, err)
			}
		}
		if q, isStop := open[op.F]; isStop || strings.HasPrefix(op.F, "stop-") {
			if len(q) == 0 {
				continue // a stop with no start: nothing to repeat
			}
			pick := 0
			if servers := strList(val["servers"]); len(servers) > 0 {
				for j, idx := range q {
					if slices.Equal(servers, out[idx].servers) {
						pick = j
						break
					}
				}
			}
			r := &out[q[pick]]
			r.End, r.closed = op.Time, true
			if r.lengthFromStop {
				r.Step.For = scenarios.Duration(roundMS(op.Time - r.Start))
			}
			open[op.F] = slices.Delete(q, pick, pick+1)
			continue
		}
		fault, stop, ok := faultOf(op.F)
		if !ok {
			return nil, fmt.Errorf("history op %d: no fault records %q, so it cannot be scripted", op.Index, op.F)
		}
		st, fromStop, err := stepOf(fault, val)
		if err != nil {
			return nil, fmt.Errorf("history op %d (%s): %w", op.Index, op.F, err)
		}
		st.At = scenarios.Duration(floorMS(op.Time))
		// The op that fired it: its process's last op (or any client's,
		// for a step with no process), when that is an ok of an event
		// the original could fire this fault on.
		trig := lastClient
		if p := eventProcess(st.Params); p >= 0 {
			if trig, ok = lastOf[p]; !ok {
				trig = -1
			}
		}
		if trig >= 0 {
			if t := &ops[trig]; t.Type == history.OK && slices.Contains(events[fault], t.F) {
				st.On, st.At = t.F, scenarios.Duration(floorMS(t.Time))
			}
		}
		out = append(out, pendingFault{RecordedFault: RecordedFault{Step: st, Start: op.Time, End: op.Time, Op: op.Index},
			servers: strList(val["servers"]), lengthFromStop: fromStop, closed: stop == ""})
		if stop != "" {
			open[stop] = append(open[stop], len(out)-1)
		}
	}
	var last int64
	if len(ops) > 0 {
		last = ops[len(ops)-1].Time
	}
	res := make([]RecordedFault, len(out))
	for i, r := range out {
		if !r.closed {
			r.End = last // never stopped: it lasted to the end
			if r.lengthFromStop {
				r.Step.For = scenarios.Duration(roundMS(last - r.Start))
			}
		}
		if r.Step.For <= 0 && !allowsZero(r.Step.Fault) {
			r.Step.For = scenarios.Duration(time.Millisecond)
		}
		res[i] = r.RecordedFault
	}
	return res, nil
}

// pendingFault is a RecordedFault still open: what matching its stop op
// needs.
type pendingFault struct {
	RecordedFault
	servers        []string
	lengthFromStop bool
	closed         bool
}

// faultOf names the fault a start op belongs to, and its stop op.
func faultOf(f string) (fault, stop string, ok bool) {
	if name, found := strings.CutPrefix(f, "start-"); found {
		if _, err := nemesis.Lookup(name); err == nil {
			return name, "stop-" + name, true
		}
		return "", "", false
	}
	for _, info := range nemesis.List() {
		fl, err := nemesis.Lookup(info.Name)
		if err != nil {
			continue
		}
		if n, isNamer := fl.(nemesis.OpNamer); isNamer {
			if start, stop := n.OpNames(info.Name); start == f {
				return info.Name, stop, true
			}
		}
	}
	return "", "", false
}

func allowsZero(fault string) bool {
	f, err := nemesis.Lookup(fault)
	if err != nil {
		return false
	}
	z, ok := f.(nemesis.ZeroDuration)
	return ok && z.AllowsZeroDuration()
}

// stepOf reads a fault's params and planned length from its start op's
// value. fromStop is set when the value holds no length, so the stop op's
// time gives it.
func stepOf(fault string, v map[string]any) (st scenarios.Step, fromStop bool, err error) {
	st.Fault = fault
	f, err := nemesis.Lookup(fault)
	if err != nil {
		return st, false, err
	}
	p := f.Params()
	ms, hasMS := num(v["ms"])
	switch p := p.(type) {
	case *nemesis.PauseParams:
		proc, ok := num(v["process"])
		if !ok {
			return st, false, fmt.Errorf("no process in the value")
		}
		p.Process = intPtr(int(proc))
	case *nemesis.PartitionParams:
		p.Topology, _ = v["topology"].(string)
		p.Direction, _ = v["direction"].(string)
		if p.Direction == string(links.BothWays) {
			p.Direction = ""
		}
		cut, _ := v["cut"].(map[string]any)
		var clients []int
		var servers []string
		for name, ss := range cut {
			var c int
			if _, err := fmt.Sscanf(name, "p%d", &c); err != nil {
				continue // replication: a server's link, not a client's
			}
			clients = append(clients, c)
			for _, s := range strList(ss) {
				if !slices.Contains(servers, s) {
					servers = append(servers, s)
				}
			}
		}
		slices.Sort(clients)
		slices.Sort(servers)
		switch p.Topology {
		case nemesis.TopologyMembers:
			p.Servers = members(v, "cut")
		case "isolate-client":
			p.ClientSet = clientSet(clients)
		case "isolate-server":
			p.Servers = servers
		case "cut", "":
			p.Topology = "cut"
			p.ClientSet, p.Servers = clientSet(clients), servers
		}
	case *nemesis.LatencyParams:
		p.ClientSet = clientSet(intList(v["clients"]))
		p.Servers = strList(v["servers"])
		p.Direction, _ = v["direction"].(string)
		if p.Topology, _ = v["topology"].(string); p.Topology == nemesis.TopologyMembers {
			p.Servers = members(v, "between")
		}
		l, _ := num(v["latency_ms"])
		j, _ := num(v["jitter_ms"])
		p.Latency, p.Jitter = nemesis.Duration(time.Duration(l)*time.Millisecond), nemesis.Duration(time.Duration(j)*time.Millisecond)
	case *nemesis.ClockParams:
		p.Servers = strList(v["servers"])
		p.ClientSet = clientSet(intList(v["clients"]))
		j, _ := num(v["jump_ms"])
		p.Jump = nemesis.Duration(time.Duration(j) * time.Millisecond)
		if r, ok := v["rate"].(float64); ok {
			p.Rate = r
		}
	case *nemesis.ServerParams:
		p.Servers = leaderNamed(v, strList(v["servers"]))
		if d, ok := num(v["restart_after_ms"]); ok {
			ms, hasMS = d, true
		}
	case *nemesis.TerminateParams:
		p.ClientSet = clientSet(intList(v["clients"]))
		ms, hasMS = 0, true
	case *nemesis.FailoverParams:
		_, p.Force = v["forced"] // true, or why Sentinel refused: it was asked
	case *nemesis.LostReplyParams:
		p.ClientSet = clientSet(intList(v["clients"]))
		p.Once, _ = v["once"].(bool)
	default:
		return st, false, fmt.Errorf("shrink cannot script %s yet", fault)
	}
	st.Params = p
	if hasMS {
		st.For = scenarios.Duration(time.Duration(ms) * time.Millisecond)
	}
	return st, !hasMS, nil
}

// members are the servers a members topology named, from the value's
// map (key) of each named member to the members on the other side, sorted;
// the leader the step named as `leader`.
func members(v map[string]any, key string) []string {
	m, _ := v[key].(map[string]any)
	var out []string
	for name := range m {
		out = append(out, name)
	}
	slices.Sort(out)
	return leaderNamed(v, out)
}

// leaderNamed puts `leader` back for the server the value records as the
// leader the step named (its "leader"), so the script targets whichever
// member leads when it strikes, as the original did.
func leaderNamed(v map[string]any, servers []string) []string {
	l, _ := v["leader"].(string)
	if l == "" {
		return servers
	}
	out := slices.Clone(servers)
	for i, s := range out {
		if s == l {
			out[i] = "leader"
		}
	}
	return out
}

func clientSet(cs []int) nemesis.ClientSet {
	switch len(cs) {
	case 0:
		return nemesis.ClientSet{}
	case 1:
		return nemesis.ClientSet{Proc: nemesis.Proc{Process: intPtr(cs[0])}}
	}
	return nemesis.ClientSet{Clients: cs}
}

func intPtr(n int) *int { return &n }

// num reads a JSON number.
func num(x any) (int64, bool) {
	f, ok := x.(float64)
	return int64(f), ok
}

func intList(x any) []int {
	xs, _ := x.([]any)
	var out []int
	for _, e := range xs {
		if n, ok := num(e); ok {
			out = append(out, int(n))
		}
	}
	return out
}

func strList(x any) []string {
	xs, _ := x.([]any)
	var out []string
	for _, e := range xs {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// eventProcess is the client whose event fires a step with these params,
// or -1 for any.
func eventProcess(p nemesis.Params) int {
	if e, ok := p.(interface{ EventProcess() int }); ok {
		return e.EventProcess()
	}
	return -1
}

func floorMS(ns int64) time.Duration {
	return time.Duration(ns) / time.Millisecond * time.Millisecond
}

func roundMS(ns int64) time.Duration {
	return time.Duration(ns).Round(time.Millisecond)
}
