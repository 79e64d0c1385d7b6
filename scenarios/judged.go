package scenarios

import (
	"fmt"
	"reflect"
	"strings"
)

// Unjudged says why a scenario's expectation does not speak for a run of
// it changed by overrides, or "" when it still does. before is the
// scenario as loaded, after the same with o applied. An expectation is
// about one lock, resource, fencing mode, fault plan and lease: changing
// the backend to one the scenario does not apply to (its backends list),
// running a program (--exec) on a scenario that lists its backends, or changing the resource, the fencing
// mode, the faults or the TTL makes the expectation about another run,
// which must not be called "as expected". The clients' number, the keys,
// the hold, the duration, the seed, the client mode and where the servers
// run leave it standing, as a matrix's cells do.
func (o Overrides) Unjudged(before, after *Scenario) string {
	if before.Expect.Valid == "" && len(before.Expect.Checkers) == 0 && len(before.Expect.Backends) == 0 {
		return "" // nothing was expected
	}
	var why []string
	applies := before.Applies(after.Backend)
	if o.Exec != nil && !applies {
		// A scenario for any backend (baseline) judges your program too.
		why = append(why, fmt.Sprintf("--exec runs your program, not the %s lock the expectation was written for", before.Backend))
	} else if o.Exec == nil && after.Backend != before.Backend && !applies {
		why = append(why, fmt.Sprintf("--backend %s is not one of the backends the scenario applies to (%s)", after.Backend, before.chosenBackends()))
	}
	if o.Resource != nil && after.Resource != before.Resource {
		why = append(why, fmt.Sprintf("--resource %s (the scenario protects %s)", after.Resource, orDefault(before.Resource, "memory")))
	}
	if o.Fencing != nil && orDefault(after.Fencing, "none") != orDefault(before.Fencing, "none") {
		why = append(why, fmt.Sprintf("--fencing %s (the scenario fences %s)", orDefault(after.Fencing, "none"), orDefault(before.Fencing, "none")))
	}
	if o.Nemesis != nil && !reflect.DeepEqual(after.Nemesis, before.Nemesis) {
		why = append(why, fmt.Sprintf("--nemesis %s replaces the scenario's faults", *o.Nemesis))
	}
	if o.TTL != nil && after.TTL != before.TTL {
		why = append(why, fmt.Sprintf("--ttl %s (the scenario's lease is %s)", after.TTL.D(), before.TTL.D()))
	}
	return strings.Join(why, "; ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
