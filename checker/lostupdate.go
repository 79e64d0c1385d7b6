package checker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/locktorture/locktorture/history"
)

// Kinds of lost update.
const (
	// duplicateWrite: two accepted writes of the same value to one key.
	duplicateWrite = "duplicate-write"
	// lowFinalRead: the final read is lower than the number of accepted writes.
	lowFinalRead = "final-read"
)

// checkLostUpdate checks the increment workload: clients read v and write v+1,
// so, per key, two accepted writes of the same value, or a final-read lower
// than the number of accepted writes (the counter starts at 0), mean an
// increment was lost. A write's value is its ok's, or else its invoke's.
// Writes that completed info may or may not have happened: they never make
// a violation. A key with accepted writes but no final-read is judged by
// duplicates only, and the result is then unknown (unless a violation makes
// it invalid): the checker cannot tell whether an increment was lost, so it
// names those keys (Unread) rather than call them valid.
func checkLostUpdate(ops []history.Op) *LostUpdateResult {
	ops = resolveTx(ops)
	res := &LostUpdateResult{Valid: Valid, Violations: []LostUpdateViolation{}}
	type write struct {
		process int
		index   int64
	}
	type keyState struct {
		accepted int
		byValue  map[int64][]write
		order    []int64 // values in order of first write, for stable output
		final    *history.Op
		finalV   int64
	}
	keys := map[string]*keyState{}
	state := func(k string) *keyState {
		s := keys[k]
		if s == nil {
			s = &keyState{byValue: map[int64][]write{}}
			keys[k] = s
		}
		return s
	}
	pending := map[int]*history.Op{}
	for i := range ops {
		op := &ops[i]
		if op.IsNemesis() || (op.F != history.Write && op.F != history.FinalRead) {
			continue
		}
		if op.Type == history.Invoke {
			pending[op.Process] = op
			continue
		}
		inv, ok := pending[op.Process]
		if !ok || inv.F != op.F || inv.Key != op.Key {
			continue
		}
		delete(pending, op.Process)
		if op.Type != history.OK {
			continue
		}
		s := state(op.Key)
		v, ok := op.Int()
		if !ok {
			v, ok = inv.Int()
		}
		if op.F == history.FinalRead {
			res.FinalReads++
			if ok {
				s.final, s.finalV = op, v
			}
			continue
		}
		s.accepted++
		res.AcceptedWrites++
		if !ok {
			continue
		}
		if _, seen := s.byValue[v]; !seen {
			s.order = append(s.order, v)
		}
		s.byValue[v] = append(s.byValue[v], write{op.Process, op.Index})
	}
	res.Keys = len(keys)
	add := func(l LostUpdateViolation) {
		res.Count++
		if len(res.Violations) < maxListed {
			res.Violations = append(res.Violations, l)
		}
	}
	for _, k := range sortedKeys(keys) {
		s := keys[k]
		for _, v := range s.order {
			ws := s.byValue[v]
			if len(ws) < 2 {
				continue
			}
			l := LostUpdateViolation{Key: k, Kind: duplicateWrite, Value: v}
			for _, w := range ws {
				l.Processes = append(l.Processes, w.process)
				l.Indexes = append(l.Indexes, w.index)
			}
			l.Description = fmt.Sprintf("processes %s %s wrote %d to %s: %s",
				joinProcesses(l.Processes), map[bool]string{true: "both", false: "all"}[len(ws) == 2], v, k, increments(len(ws)-1, "was lost"))
			add(l)
		}
		if s.final != nil && s.finalV < int64(s.accepted) {
			add(LostUpdateViolation{
				Key: k, Kind: lowFinalRead, Value: s.finalV, Indexes: []int64{s.final.Index}, Accepted: s.accepted,
				Description: fmt.Sprintf("%s read %d at the end but %s accepted: %s",
					k, s.finalV, plural(s.accepted, "write was", "writes were"), increments(s.accepted-int(s.finalV), "lost")),
			})
		}
	}
	for _, k := range sortedKeys(keys) {
		if s := keys[k]; s.final == nil && s.accepted > 0 {
			res.Unread = append(res.Unread, k)
		}
	}
	res.settle()
	return res
}

// keyNames writes "k0", "k0 and k1" or "k0, k1 and 3 more keys".
func keyNames(ks []string) string {
	const shown = 3
	if len(ks) > shown+1 {
		return strings.Join(ks[:shown], ", ") + fmt.Sprintf(" and %d more keys", len(ks)-shown)
	}
	if len(ks) == 1 {
		return ks[0]
	}
	return strings.Join(ks[:len(ks)-1], ", ") + " and " + ks[len(ks)-1]
}

// joinProcesses writes "1 and 0" or "1, 0 and 2".
func joinProcesses(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// increments writes "one increment was lost" or "3 increments were lost"
// (verb "was lost"), or "1 increment lost" / "6 increments lost" (verb "lost").
func increments(n int, verb string) string {
	if verb == "lost" {
		return plural(n, "increment", "increments") + " lost"
	}
	if n == 1 {
		return "one increment was lost"
	}
	return fmt.Sprintf("%d increments were lost", n)
}

// plural writes "1 thing" or "n things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// settle gives the verdict once the violations and unread keys are known:
// invalid on a lost update, unknown when a key with accepted writes had no
// final read (nothing can tell then), valid otherwise.
func (res *LostUpdateResult) settle() {
	switch {
	case res.Count > 0:
		res.Valid = Invalid
	case len(res.Unread) > 0:
		res.Valid = Unknown
		res.Note = fmt.Sprintf("no final read of %s: cannot tell whether an increment was lost", keyNames(res.Unread))
	}
}
