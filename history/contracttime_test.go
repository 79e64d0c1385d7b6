package history

import (
	"errors"
	"strings"
	"testing"
)

// TestReaderRefusesTimeItCannotCheck: read to the contract, a time below
// zero, or time going backwards (an ok stamped before its own invoke), is
// refused naming the line — the checkers would misjudge such a history
// (an uncontested acquire judged not linearizable, a plot indexed below
// zero) — while a reader not held to the contract reads it as it is.
func TestReaderRefusesTimeItCannotCheck(t *testing.T) {
	const (
		inv = `{"index":0,"time":2000,"process":0,"type":"invoke","f":"acquire","key":"k0"}` + "\n"
		ok  = `{"index":1,"time":3000,"process":0,"type":"ok","f":"acquire","key":"k0"}` + "\n"
	)
	for _, tc := range []struct {
		name, in string
		ops      int // read before the error
		says     []string
	}{
		{"in order", inv + ok, 2, nil},
		{"equal times", inv + strings.Replace(ok, "3000", "2000", 1), 2, nil},
		{"time zero", strings.Replace(inv, "2000", "0", 1) + ok, 2, nil},
		{"below zero", strings.Replace(inv, "2000", "-5000000000", 1) + ok, 0, []string{"line 1:", "time -5000000000 is below zero"}},
		{"below zero later", inv + strings.Replace(ok, "3000", "-1", 1), 1, []string{"line 2:", "below zero"}},
		{"ok before its invoke", inv + strings.Replace(ok, "3000", "1000", 1), 1, []string{"line 2:", "time goes backwards", "1000", "2000"}},
		{"after blank lines", inv + "\n\n" + strings.Replace(ok, "3000", "1999", 1), 1, []string{"line 4:", "time goes backwards"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, contract := range []bool{false, true} {
				ops, err := readAll(strings.NewReader(tc.in), contract)
				if !contract || tc.says == nil {
					if err != nil || len(ops) != 2 {
						t.Errorf("contract %v: %d ops, %v; want 2 ops, no error", contract, len(ops), err)
					}
					continue
				}
				if err == nil || len(ops) != tc.ops {
					t.Fatalf("%d ops, %v; want %d ops and an error", len(ops), err, tc.ops)
				}
				if !errors.Is(err, errContract) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q: want one line breaking the contract", err)
				}
				for _, s := range tc.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				// Two halves read side by side say the same, wherever cut.
				for mid := int64(0); mid <= int64(len(tc.in)); mid++ {
					checkSplit(t, tc.name, []byte(tc.in), mid, true, ops, err)
				}
			}
		})
	}
}
