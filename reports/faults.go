package reports

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/locktorture/locktorture/history"
)

// fault is one nemesis action as the plots and pages show it: a window
// (start-X ... stop-X) or an instant (X alone).
type fault struct {
	// Kind is the fault's name without start-/stop- ("pause", "partition").
	Kind string
	// Start and End are nanoseconds on the history's clock; End == Start
	// for an instant fault.
	Start, End int64
	// Instant is set for faults without a start/stop pair (failover, kill).
	Instant bool
	// Open is set when the fault was never stopped (it extends to the end).
	Open bool
	// Processes are the client processes the fault targets (from the value's
	// "process" or "processes"); nil means the whole system.
	Processes []int
	// Value is the start op's value, compacted, for captions.
	Value string
}

// Label says the fault in a few words.
func (f fault) Label() string {
	s := f.Kind
	if f.Value != "" {
		s += " " + f.Value
	}
	return s
}

// parseTargets reads the client processes named by a nemesis value: its
// "process" or "client" number, or "processes" or "clients" list.
func parseTargets(v json.RawMessage) []int {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return nil
	}
	var out []int
	for _, k := range []string{"process", "client"} {
		var n int
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &n) == nil {
			out = append(out, n)
		}
	}
	for _, k := range []string{"processes", "clients"} {
		var ns []int
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &ns) == nil {
			out = append(out, ns...)
		}
	}
	return out
}

// compactValue renders a nemesis value on one short line.
func compactValue(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var b strings.Builder
	var x any
	if json.Unmarshal(v, &x) != nil {
		return truncate(string(v), 60)
	}
	if m, ok := x.(map[string]any); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(' ')
			}
			vb, _ := json.Marshal(m[k])
			b.WriteString(k + "=" + strings.Trim(string(vb), `"`))
		}
		return truncate(b.String(), 60)
	}
	return truncate(string(v), 60)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// faults pairs the nemesis ops of a history into windows and instants, in
// order of start. A stop is matched with the oldest open start of the same
// kind and targets (or of the same kind, when no targets match); a start
// never stopped extends to the history's last op.
func faults(ops []history.Op) []fault {
	var out []fault
	open := map[string][]int{} // kind -> indexes into out, oldest first
	var last int64
	for i := range ops {
		op := &ops[i]
		if op.Time > last {
			last = op.Time
		}
		if !op.IsNemesis() {
			continue
		}
		switch {
		case strings.HasPrefix(op.F, "start-"):
			kind := strings.TrimPrefix(op.F, "start-")
			open[kind] = append(open[kind], len(out))
			out = append(out, fault{Kind: kind, Start: op.Time, End: -1, Processes: parseTargets(op.Value), Value: compactValue(op.Value)})
		case strings.HasPrefix(op.F, "stop-"):
			kind := strings.TrimPrefix(op.F, "stop-")
			q := open[kind]
			if len(q) == 0 {
				continue // a stop without a start: nothing to draw
			}
			pick := 0
			if targets := parseTargets(op.Value); len(targets) > 0 {
				for j, idx := range q {
					if sameInts(out[idx].Processes, targets) {
						pick = j
						break
					}
				}
			}
			out[q[pick]].End = op.Time
			open[kind] = append(q[:pick:pick], q[pick+1:]...)
		default:
			out = append(out, fault{Kind: op.F, Start: op.Time, End: op.Time, Instant: true, Processes: parseTargets(op.Value), Value: compactValue(op.Value)})
		}
	}
	for i := range out {
		if out[i].End < 0 {
			out[i].End = last
			out[i].Open = true
		}
	}
	return out
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// faultKinds returns the distinct kinds in order of first appearance.
func faultKinds(fs []fault) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range fs {
		if !seen[f.Kind] {
			seen[f.Kind] = true
			out = append(out, f.Kind)
		}
	}
	return out
}

// procLabel names a client process as the plots do.
func procLabel(p int) string { return "p" + strconv.Itoa(p) }
