package reports

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/histgen"
)

// TestDensity: a long run's buckets stay bounded (they widen as it goes
// on) and keep every hold and overlap the checkers count; a long run's
// report draws density.png and lists it first.
func TestDensity(t *testing.T) {
	ops := histgen.Realistic(7, 6, 3, 200000)
	// Stretch the history's clock to an hour, and let one key be granted
	// twice at once.
	granted := false
	for i := range ops {
		ops[i].Time *= 100
		if !granted && i > len(ops)/2 && ops[i].F == history.Acquire && ops[i].Type == history.Fail {
			ops[i].Type, ops[i].Error, granted = history.OK, "", true // held from here to the end
		}
	}
	d := NewDensity()
	for i := range ops {
		d.Add(&ops[i])
	}
	if len(d.done) > densityBuckets || d.width <= 1e7 {
		t.Fatalf("%d buckets of %d ns over %d ns", len(d.done), d.width, d.last)
	}
	m := checker.Mutex(ops)
	var holds, overlaps int32
	for _, k := range d.keys {
		for _, v := range k.holds {
			holds += v
		}
		for _, v := range k.overlaps {
			overlaps += v
		}
	}
	if int(holds) != m.Holds || int(overlaps) != m.Count || m.Count == 0 {
		t.Fatalf("density counted %d holds and %d overlaps, the mutex checker %d and %d", holds, overlaps, m.Holds, m.Count)
	}
	png, err := densityPNG(d, "test")
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("density.png: %v", err)
	}
	dir := t.TempDir()
	res := &checker.Results{Valid: checker.Valid, Ops: len(ops)}
	if err := WriteRun(context.Background(), dir, ops[:1000], res, RunInfo{Excerpt: "a long run: the plots show ops 0–999", Density: d}); err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(dir, FileIndex))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, fileDensity)); err != nil || !bytes.Contains(index, []byte(fileDensity)) || !bytes.Contains(index, []byte("the plots show ops 0–999")) {
		t.Fatalf("density.png %v; index:\n%s", err, index)
	}
}

// TestDensityKeys: keys that share a place among the last looked up
// (see Density.key) keep their own counts, in order of their first op,
// as the mutex checker counts them.
func TestDensityKeys(t *testing.T) {
	for name, rename := range map[string]func(k string) string{
		"one slot":   func(k string) string { return k + "-1x" },
		"short keys": func(k string) string { return k[1:] },
		"as made":    func(k string) string { return k },
	} {
		t.Run(name, func(t *testing.T) {
			ops := histgen.Realistic(9, 12, 70, 30000)
			var order []string
			seen := map[string]bool{}
			for i := range ops {
				if ops[i].Key == "" {
					continue
				}
				ops[i].Key = rename(ops[i].Key)
				if k := ops[i].Key; !ops[i].IsNemesis() && !seen[k] {
					seen[k] = true
					order = append(order, k)
				}
			}
			d := NewDensity()
			for i := range ops {
				d.Add(&ops[i])
			}
			if !slices.Equal(d.order, order) {
				t.Fatalf("keys in order %v, want %v", d.order, order)
			}
			holds := map[string]int{}
			for _, h := range checker.Holds(ops) {
				holds[h.Key]++
			}
			for k, kd := range d.keys {
				n := 0
				for _, v := range kd.holds {
					n += int(v)
				}
				if kd.name != k || n != holds[k] {
					t.Errorf("key %s (named %q): %d holds, the checkers count %d", k, kd.name, n, holds[k])
				}
			}
		})
	}
}
