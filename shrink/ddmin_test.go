package shrink

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestDDMin(t *testing.T) {
	tests := []struct {
		name string
		n    int
		// fails says whether a subset still fails.
		fails func(s []int) bool
		want  []int
	}{
		{"one item matters", 8, func(s []int) bool { return slices.Contains(s, 5) }, []int{5}},
		{"two items together", 10, func(s []int) bool { return slices.Contains(s, 1) && slices.Contains(s, 7) }, []int{1, 7}},
		{"three spread out", 16, func(s []int) bool {
			return slices.Contains(s, 0) && slices.Contains(s, 8) && slices.Contains(s, 15)
		}, []int{0, 8, 15}},
		{"every item matters", 4, func(s []int) bool { return len(s) == 4 }, []int{0, 1, 2, 3}},
		{"either of two", 6, func(s []int) bool { return slices.Contains(s, 2) || slices.Contains(s, 4) }, []int{2}},
		{"a single item", 1, func(s []int) bool { return true }, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items := make([]int, tc.n)
			for i := range items {
				items[i] = i
			}
			var calls [][]int
			got, err := ddmin(context.Background(), items, func(_ context.Context, s []int) (bool, error) {
				if len(s) == 0 || len(s) == tc.n {
					t.Errorf("tested %v: never the empty set or everything", s)
				}
				calls = append(calls, slices.Clone(s))
				return tc.fails(s), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ddmin = %v, want %v", got, tc.want)
			}
			// 1-minimal: dropping any one item makes it pass.
			for i := range got {
				if len(got) > 1 && tc.fails(slices.Delete(slices.Clone(got), i, i+1)) {
					t.Errorf("%v is not 1-minimal: without %d it still fails", got, got[i])
				}
			}
			// Deterministic: the same answers give the same calls.
			var again [][]int
			_, _ = ddmin(context.Background(), items, func(_ context.Context, s []int) (bool, error) {
				again = append(again, slices.Clone(s))
				return tc.fails(s), nil
			})
			if !slices.EqualFunc(calls, again, slices.Equal) {
				t.Errorf("a second search made other calls:\n%v\n%v", calls, again)
			}
		})
	}
}

func TestDDMinErrorKeepsBest(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	got, err := ddmin(context.Background(), []int{0, 1, 2, 3, 4, 5, 6, 7}, func(_ context.Context, s []int) (bool, error) {
		n++
		if n == 2 {
			return false, stop
		}
		return slices.Contains(s, 1), nil // the first half {0..3} fails
	})
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v, want stop", err)
	}
	if want := []int{0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("best so far = %v, want %v", got, want)
	}
}

func TestCutPoints(t *testing.T) {
	tests := []struct {
		ws, want []int64
	}{
		{nil, nil},
		{[]int64{5}, []int64{5}},
		{[]int64{1, 2}, []int64{1, 2}},
		{[]int64{1, 2, 3, 4, 5, 6, 7}, []int64{1, 3, 5, 7}},
		{[]int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, []int64{10, 40, 70, 100}},
	}
	for _, tc := range tests {
		if got := cutPoints(tc.ws); !slices.Equal(got, tc.want) {
			t.Errorf("cutPoints(%v) = %v, want %v", tc.ws, got, tc.want)
		}
	}
}
