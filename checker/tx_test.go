package checker

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/history"
)

func tx(o *history.Op) { o.Tx = true }

// A write inside the lock's transaction counts only if its commit (the
// release) did: a rolled-back duplicate is no lost update, a committed one is.
func TestTxWritesJudgedByTheirCommit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release func(b *hb) *hb
		want    Validity
		lost    int
	}{
		{"rolled back", func(b *hb) *hb { return b.fail(2.1, 0, rel, "k0", errMsg("COMMIT was not sent")) }, Valid, 0},
		{"commit unknown", func(b *hb) *hb { return b.info(2.1, 0, rel, "k0", errMsg("timeout")) }, Valid, 0},
		{"committed", func(b *hb) *hb { return b.ok(2.1, 0, rel, "k0") }, Invalid, 2}, // a duplicate and a low final read
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHistory().
				inv(0.0, 0, acq, "k0").ok(0.1, 0, acq, "k0").
				inv(0.2, 0, "read", "k0").ok(0.2, 0, "read", "k0", val(0)).
				inv(1.9, 0, "write", "k0", val(1), tx).ok(1.9, 0, "write", "k0", val(1), tx).
				inv(2.0, 0, rel, "k0")
			b = tc.release(b)
			b.inv(2.2, 1, acq, "k0").ok(2.3, 1, acq, "k0").
				inv(2.3, 1, "read", "k0").ok(2.3, 1, "read", "k0", val(0)).
				inv(2.4, 1, "write", "k0", val(1), tx).ok(2.4, 1, "write", "k0", val(1), tx).
				inv(2.5, 1, rel, "k0").ok(2.6, 1, rel, "k0").
				inv(3, 0, "final-read", "k0").ok(3, 0, "final-read", "k0", val(1))
			r := checkLostUpdate(b.build())
			if r.Valid != tc.want || r.Count != tc.lost {
				t.Errorf("got %v with %d lost, want %v with %d: %+v", r.Valid, r.Count, tc.want, tc.lost, r.Violations)
			}
		})
	}
}

// Without Tx marks the history is judged as it is (no copy either).
func TestResolveTxLeavesOthersAlone(t *testing.T) {
	ops := newHistory().hold(0, "k0", 0, 1).build()
	if got := resolveTx(ops); &got[0] != &ops[0] {
		t.Error("resolveTx copied a history without transactional writes")
	}
}

// A hold inside a transaction that rolled back (its COMMIT certainly
// failed) took no effect: it overlaps nothing, and both lock checkers agree.
// When the COMMIT's outcome is unknown the hold stands.
func TestTxHoldsVoidWhenRolledBack(t *testing.T) {
	for _, tc := range []struct {
		name       string
		release    func(b *hb) *hb
		want       Validity
		rolledBack int
	}{
		{"rolled back", func(b *hb) *hb { return b.fail(2.1, 0, rel, "k0", errMsg("conn closed")) }, Valid, 1},
		{"commit unknown", func(b *hb) *hb { return b.info(2.1, 0, rel, "k0", errMsg("timeout")) }, Invalid, 0},
		{"committed", func(b *hb) *hb { return b.ok(2.1, 0, rel, "k0") }, Invalid, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHistory().
				inv(0.0, 0, acq, "k0").ok(0.1, 0, acq, "k0", tx).
				inv(1.9, 0, "write", "k0", val(1), tx).fail(1.9, 0, "write", "k0", val(1), tx, errMsg("conn closed")).
				inv(2.0, 0, rel, "k0")
			b = tc.release(b)
			ops := b.inv(1.0, 1, acq, "k0").ok(1.1, 1, acq, "k0", tx).inv(1.5, 1, rel, "k0").ok(1.6, 1, rel, "k0").build()
			m, l := Mutex(ops), checkLinearizable(context.Background(), ops, 0)
			if m.Valid != tc.want || l.Valid != tc.want {
				t.Errorf("mutex %v, linearizable %v, want %v", m.Valid, l.Valid, tc.want)
			}
			if m.RolledBack != tc.rolledBack {
				t.Errorf("rolled back %d, want %d", m.RolledBack, tc.rolledBack)
			}
		})
	}
}
