package checker

import (
	"path/filepath"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// TestTrackerAgreesWithMutex: the live count a progress display shows is
// the mutex checker's count on every golden history and a random busy one.
func TestTrackerAgreesWithMutex(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no golden histories")
	}
	cases := map[string][]history.Op{"realistic": realisticHistory(3, 6, 3, 5000)}
	for _, f := range files {
		ops, err := history.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[filepath.Base(f)] = ops
	}
	for name, ops := range cases {
		var tr Tracker
		live := 0
		for i := range ops {
			live += tr.Observe(&ops[i])
		}
		if m := Mutex(ops); m.Count != live {
			t.Errorf("%s: tracker counted %d overlaps, mutex %d", name, live, m.Count)
		}
	}
}
