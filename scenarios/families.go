package scenarios

import "slices"

// Families are the fault families a backend comparison (locktorture
// compare) runs on every backend, in the order of its columns: each is a
// built-in scenario whose expectation is stated per backend, with the
// backends it cannot apply to in not_run (each with its reason), or the
// few built-ins familyScenarios lists for it.
var Families = []string{"pause", "partition", "delay", "restart", "failover", "clock", "kill-session", "lost-reply", "renew-partition", "renew-delay"}

// familyScenarios lists the built-in scenarios of a family whose fault
// takes another shape where the backends replicate otherwise: failover
// is a Sentinel promoting a replica for the backends over Redis
// (failover) and the loss of the raft or zab leader for etcd and
// ZooKeeper (failover-leader). A family not listed is the one built-in of
// its name.
var familyScenarios = map[string][]string{"failover": {"failover", "failover-leader"}}

// FamilyScenarios returns the built-in scenarios a comparison runs for
// family, each over the backends it applies to.
func FamilyScenarios(family string) []string {
	if s, ok := familyScenarios[family]; ok {
		return slices.Clone(s)
	}
	return []string{family}
}

// FamilyOf returns the family whose column a scenario's cells fill in a
// comparison: the family that lists it (failover-leader: failover), else
// its own name.
func FamilyOf(scenario string) string {
	for f, ss := range familyScenarios {
		if slices.Contains(ss, scenario) {
			return f
		}
	}
	return scenario
}

// MatrixDefault lists the built-in scenarios a matrix runs when none is
// named: every one but the families written for compare alone (failover
// is also a canonical story, so it stays; failover-leader, its other
// half, does not).
func MatrixDefault() []string {
	var out []string
	for _, n := range BuiltinNames() {
		if n == "failover" || !slices.Contains(Families, FamilyOf(n)) {
			out = append(out, n)
		}
	}
	return out
}
