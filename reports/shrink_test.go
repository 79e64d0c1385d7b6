package reports

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/matrix"
)

func TestShrinkHTML(t *testing.T) {
	ops := []history.Op{
		{Index: 0, Time: 1e6, Process: 0, Type: history.Invoke, F: "acquire", Key: "k0"},
		{Index: 1, Time: 2e6, Process: 0, Type: history.OK, F: "acquire", Key: "k0"},
		{Index: 2, Time: 3e6, Process: -1, Type: history.Info, F: "start-pause", Value: json.RawMessage(`{"process":0,"ms":5}`)},
		{Index: 3, Time: 9e6, Process: -1, Type: history.Info, F: "stop-pause", Value: json.RawMessage(`{"process":0}`)},
	}
	res := &checker.Results{Valid: checker.Invalid}
	tests := []struct {
		name      string
		shrunkOps []history.Op
		want      []string
		wantNot   []string
	}{
		{"both timelines", ops, []string{
			"locktorture run --scenario-file store/x/shrunk.yaml", `class="kept">pause process 0`, `class="dropped">partition process 1`,
			"1 of the original 2 faults matter", `alt="original timeline"`, `alt="shrunk timeline"`,
		}, nil},
		{"no shrunk history", nil, []string{`alt="original timeline"`}, []string{`alt="shrunk timeline"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := shrinkHTML(ShrinkInfo{
				Scenario: "chaos", Backend: "redis-token", Dir: "store/x", Seed: 1, Checker: "mutex", Reruns: 3,
				OriginalShape: "2 faults", ShrunkShape: "1 fault", OriginalOps: ops, OriginalResults: res,
				ShrunkOps: tc.shrunkOps, ShrunkResults: res,
				Faults:  []ShrinkFault{{Step: "pause process 0 at 3ms for 5ms", Kept: true}, {Step: "partition process 1 at 1s for 1s"}},
				Command: "locktorture run --scenario-file store/x/shrunk.yaml",
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("shrink.html lacks %q", w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(string(b), w) {
					t.Errorf("shrink.html has %q", w)
				}
			}
		})
	}
}

func TestMatrixShowsShrink(t *testing.T) {
	m := &matrix.Matrix{Kind: matrix.Kind, Cells: []matrix.Cell{
		{CellKey: matrix.CellKey{Scenario: "chaos", Backend: "redis-token", Seed: 1}, Verdict: "invalid", Expected: "invalid", AsExpected: true, Shrink: "locktorture shrink store/chaos/redis-token/20261123T105016"},
		{CellKey: matrix.CellKey{Scenario: "baseline", Backend: "redis-token", Seed: 1}, Verdict: "valid", Expected: "valid", AsExpected: true},
	}}
	b, err := matrixHTML(m)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "shrink: <code>"); n != 1 {
		t.Fatalf("%d shrink commands on the page, want 1 (the invalid chaos cell)", n)
	}
	if !strings.Contains(string(b), "locktorture shrink store/chaos/redis-token/20261123T105016") {
		t.Fatal("the chaos cell's shrink command is missing")
	}
}
