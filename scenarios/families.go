package scenarios

// Families are the fault families a backend comparison (locktorture
// compare) runs on every backend, in the order of its columns: each is a
// built-in scenario whose expectation is stated per backend, with the
// backends it cannot apply to in not_run (each with its reason).
var Families = []string{"pause", "partition", "delay", "restart", "failover", "clock", "kill-session", "lost-reply"}
