package scenarios

import "testing"

// TestExecProgramName: the summary's program is the script, not the
// launcher that runs it.
func TestExecProgramName(t *testing.T) {
	for cmd, want := range map[string]string{
		"/usr/bin/env LT_X=1 node x.js":          "x.js",
		"env -i A=1 /usr/bin/python3 -u lock.py": "lock.py",
		"clients/node/run.sh redis-lock.js":      "redis-lock.js",
		"./my-adapter --flag":                    "my-adapter",
		"java -jar lock.jar":                     "lock.jar",
		"/usr/bin/env":                           "env",
		"/bin/sh clients/java/curator_lock.sh":   "curator_lock.sh",
		"clients/node/run.sh pg-lock.js xact":    "pg-lock.js",
	} {
		argv, _ := SplitCommand(cmd)
		if got := (&Exec{Command: argv}).Program(); got != want {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
}
