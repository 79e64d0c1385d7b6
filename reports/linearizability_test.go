package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// TestLinearizabilityAnnotations: porcupine's view carries the fault
// windows as annotations on the paused client's row, placed among the lock
// operations that happened during the pause.
func TestLinearizabilityAnnotations(t *testing.T) {
	ops := kleppmann()
	page := string(linearizabilityHTML(context.Background(), ops, "kleppmann"))
	m := regexp.MustCompile(`"Annotations":(\[[^]]*\])`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no annotations in linearizability.html")
	}
	var anns []struct {
		ClientId        int
		Tag             string
		Start, End      int
		Description     string
		BackgroundColor string
	}
	if err := json.Unmarshal([]byte(m[1]), &anns); err != nil {
		t.Fatal(err)
	}
	if len(anns) != 1 {
		t.Fatalf("want the one pause, got %+v", anns)
	}
	a := anns[0]
	if a.ClientId != 0 || a.Tag != "" || a.Description != "pause" || a.BackgroundColor == "" {
		t.Errorf("annotation: %+v", a)
	}
	// The pause (70ms to 2570ms) spans p1's acquire and release at 1.1s
	// and 1.5s, and ends before p0's release at 2.7s: in porcupine's
	// numbering of the six lock operations' events, it covers the events
	// from the third to the sixth.
	if !(a.Start < a.End) {
		t.Errorf("the pause should span operations: %+v", a)
	}
	hist := regexp.MustCompile(`"Description":"p1 acquire k0 -\\u003e ok \(fence 34\)"`).FindStringIndex(page)
	if hist == nil {
		t.Fatal("p1's acquire is not in the view")
	}
	if a.Start != 200 || a.End != 500 {
		t.Errorf("pause drawn over %d..%d, want 200..500 (p1's acquire call to its release return)", a.Start, a.End)
	}
}

// TestLinearizabilityDeterministic: a history porcupine cannot linearize
// in many equally long ways (four processes granted one key at once) draws
// the same page every time, though porcupine collects those ways from a map.
func TestLinearizabilityDeterministic(t *testing.T) {
	var h hb
	I, O := history.Invoke, history.OK
	for p := range 4 {
		h.add(float64(1+p), p, I, "acquire", "k0")
	}
	for p := range 4 {
		h.add(float64(10+p), p, O, "acquire", "k0", lease(1000))
	}
	for p := range 4 {
		h.add(float64(20+2*p), p, I, "release", "k0")
		h.add(float64(21+2*p), p, O, "release", "k0")
	}
	first := linearizabilityHTML(context.Background(), h.ops, "four at once")
	if !strings.Contains(string(first), `"PartialLinearizations":[[`) {
		t.Fatal("no porcupine view drawn")
	}
	for i := range 20 {
		if again := linearizabilityHTML(context.Background(), h.ops, "four at once"); !bytes.Equal(again, first) {
			t.Fatalf("drawing %d differs from the first", i+2)
		}
	}
}
