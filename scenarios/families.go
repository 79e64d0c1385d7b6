package scenarios

import "slices"

// Families are the fault families a backend comparison (locktorture
// compare) runs on every backend, in the order of its columns: each is a
// built-in scenario whose expectation is stated per backend, with the
// backends it cannot apply to in not_run (each with its reason).
var Families = []string{"pause", "partition", "delay", "restart", "failover", "clock", "kill-session", "lost-reply"}

// MatrixDefault lists the built-in scenarios a matrix runs when none is
// named: every one but the families written for compare alone (failover
// is also a canonical story, so it stays).
func MatrixDefault() []string {
	var out []string
	for _, n := range BuiltinNames() {
		if n == "failover" || !slices.Contains(Families, n) {
			out = append(out, n)
		}
	}
	return out
}
