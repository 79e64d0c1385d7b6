package words

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 cells"}, {1, "1 cell"}, {2, "2 cells"}, {-1, "-1 cells"}} {
		if got := Count(tc.n, "cell", "cells"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if Noun(1, "is", "are") != "is" || Noun(3, "is", "are") != "are" {
		t.Error("Noun")
	}
}
