package checker

import (
	"cmp"
	"math"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// hb builds synthetic histories: ops may be added in any order; build sorts
// them by time (stably) and numbers them.
type hb struct{ ops []history.Op }

// opt sets an optional field of an op.
type opt func(*history.Op)

func fence(n int64) opt    { return func(o *history.Op) { o.Fence = history.Int64(n) } }
func lease(ms int64) opt   { return func(o *history.Op) { o.LeaseMS = history.Int64(ms) } }
func val(v int64) opt      { return func(o *history.Op) { o.Value = history.IntValue(v) } }
func errMsg(s string) opt  { return func(o *history.Op) { o.Error = s } }
func ns(sec float64) int64 { return int64(math.Round(sec * 1e9)) }
func newHistory() *hb      { return &hb{} }

// add appends one op at t seconds.
func (b *hb) add(t float64, p int, ty history.Type, f, key string, opts ...opt) *hb {
	o := history.Op{Time: ns(t), Process: p, Type: ty, F: f, Key: key}
	for _, fn := range opts {
		fn(&o)
	}
	b.ops = append(b.ops, o)
	return b
}

func (b *hb) inv(t float64, p int, f, key string, o ...opt) *hb {
	return b.add(t, p, history.Invoke, f, key, o...)
}
func (b *hb) ok(t float64, p int, f, key string, o ...opt) *hb {
	return b.add(t, p, history.OK, f, key, o...)
}
func (b *hb) fail(t float64, p int, f, key string, o ...opt) *hb {
	return b.add(t, p, history.Fail, f, key, o...)
}
func (b *hb) info(t float64, p int, f, key string, o ...opt) *hb {
	return b.add(t, p, history.Info, f, key, o...)
}

// nemesis adds a nemesis op.
func (b *hb) nemesis(t float64, f string) *hb {
	return b.add(t, history.NemesisProcess, history.Info, f, "")
}

// hold adds acquire invoke (1ms before from), acquire ok at from, release
// invoke at to and release ok 1ms later; opts go on the acquire ok.
func (b *hb) hold(p int, key string, from, to float64, o ...opt) *hb {
	b.inv(from-0.001, p, history.Acquire, key).ok(from, p, history.Acquire, key, o...)
	return b.inv(to, p, history.Release, key).ok(to+0.001, p, history.Release, key)
}

// build sorts the ops by time, keeping insertion order among equal times,
// and numbers them.
func (b *hb) build() []history.Op {
	ops := slices.Clone(b.ops)
	slices.SortStableFunc(ops, func(x, y history.Op) int { return cmp.Compare(x.Time, y.Time) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}
