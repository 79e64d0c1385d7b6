package checker

import (
	"path/filepath"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// TestTrackerAgreesWithMutex: the live count a progress display shows is
// the mutex checker's count (and its holds and stale holders) on every
// golden history and a realistic busy one. (Where events share a
// nanosecond the live count may differ: it sees them in the order they
// were recorded; the checker orders them as the mutex rule says.)
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
		m := Mutex(ops)
		if m.Count != live {
			t.Errorf("%s: tracker counted %d overlaps, mutex %d", name, live, m.Count)
		}
		holds, overlaps, stale := tr.Totals()
		if holds != m.Holds || overlaps != m.Count || stale != m.StaleHolders {
			t.Errorf("%s: tracker totals %d holds, %d overlaps, %d stale; mutex %d, %d, %d", name, holds, overlaps, stale, m.Holds, m.Count, m.StaleHolders)
		}
	}
}
