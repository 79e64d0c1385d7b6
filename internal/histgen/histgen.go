// Package histgen generates synthetic histories of a healthy lock for
// benchmarks and tests: clients cycling through acquire, read, write and
// release, as a real run records them.
package histgen

import (
	"fmt"
	"math/rand/v2"

	"github.com/locktorture/locktorture/history"
)

// Realistic simulates a healthy run: procs clients cycle through
// acquire (try-lock: fail when busy), read, write, release on random keys of
// a correct fenced lock with a 1s lease, with latencies of 50µs to 1ms and
// a nemesis op now and then, until n ops are recorded; then it reads every
// key once more (final-read).
func Realistic(seed uint64, procs, keys, n int) []history.Op {
	ops := make([]history.Op, 0, n+2*keys)
	Each(seed, procs, keys, n, func(op *history.Op) { ops = append(ops, *op) })
	return ops
}

// Each is Realistic one op at a time, for histories too long to hold:
// yield gets each op in turn (valid only during the call).
func Each(seed uint64, procs, keys, n int, yield func(*history.Op)) {
	r := rand.New(rand.NewPCG(seed, 1))
	var count int64
	type client struct {
		next  int64 // when its next event happens
		step  int   // 0 invoke acquire, 1 complete acquire, 2..7 read/write/release
		key   string
		fence int64
		value int64
	}
	cs := make([]client, procs)
	for i := range cs {
		cs[i].next = r.Int64N(1000000)
	}
	owner := map[string]int{}
	values := map[string]int64{}
	var fence, now int64
	emit := func(o history.Op) {
		o.Index, o.Time = count, now
		count++
		yield(&o)
	}
	lat := func() int64 { return 50000 + r.Int64N(950000) }
	for count < int64(n) {
		p := 0
		for i := range cs {
			if cs[i].next < cs[p].next {
				p = i
			}
		}
		c := &cs[p]
		now = c.next
		if r.IntN(20000) == 0 {
			emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: "start-pause", Value: history.ObjectValue(map[string]int{"process": p, "ms": 0})})
			emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: "stop-pause", Value: history.ObjectValue(map[string]int{"process": p})})
		}
		switch c.step {
		case 0:
			c.key = fmt.Sprintf("k%d", r.IntN(keys))
			emit(history.Op{Process: p, Type: history.Invoke, F: history.Acquire, Key: c.key})
		case 1:
			if o, held := owner[c.key]; held && o != p {
				emit(history.Op{Process: p, Type: history.Fail, F: history.Acquire, Key: c.key, Error: "lock is busy"})
				c.step, c.next = 0, now+lat()
				continue
			}
			owner[c.key] = p
			fence++
			c.fence = fence
			emit(history.Op{Process: p, Type: history.OK, F: history.Acquire, Key: c.key, Fence: history.Int64(fence), LeaseMS: history.Int64(1000)})
		case 2:
			emit(history.Op{Process: p, Type: history.Invoke, F: history.Read, Key: c.key, Fence: history.Int64(c.fence)})
		case 3:
			c.value = values[c.key]
			emit(history.Op{Process: p, Type: history.OK, F: history.Read, Key: c.key, Fence: history.Int64(c.fence), Value: history.IntValue(c.value)})
		case 4:
			emit(history.Op{Process: p, Type: history.Invoke, F: history.Write, Key: c.key, Fence: history.Int64(c.fence), Value: history.IntValue(c.value + 1)})
		case 5:
			values[c.key] = c.value + 1
			emit(history.Op{Process: p, Type: history.OK, F: history.Write, Key: c.key, Fence: history.Int64(c.fence), Value: history.IntValue(c.value + 1)})
		case 6:
			emit(history.Op{Process: p, Type: history.Invoke, F: history.Release, Key: c.key})
			delete(owner, c.key)
		case 7:
			emit(history.Op{Process: p, Type: history.OK, F: history.Release, Key: c.key})
		}
		c.step = (c.step + 1) % 8
		c.next = now + lat()
	}
	// Let every client finish, then read each key.
	for p := range cs {
		c := &cs[p]
		for c.step != 0 {
			now = max(now, c.next)
			switch c.step {
			case 1:
				emit(history.Op{Process: p, Type: history.Fail, F: history.Acquire, Key: c.key, Error: "stopping"})
				c.step = 0
				continue
			case 3, 5, 7:
				ty := history.OK
				f := map[int]string{3: history.Read, 5: history.Write, 7: history.Release}[c.step]
				o := history.Op{Process: p, Type: ty, F: f, Key: c.key}
				if f == history.Write {
					values[c.key] = c.value + 1
					o.Value = history.IntValue(c.value + 1)
				}
				if f == history.Read {
					c.value = values[c.key]
					o.Value = history.IntValue(c.value)
				}
				emit(o)
			default:
				f := map[int]string{2: history.Read, 4: history.Write, 6: history.Release}[c.step]
				emit(history.Op{Process: p, Type: history.Invoke, F: f, Key: c.key})
				if f == history.Release {
					delete(owner, c.key)
				}
			}
			c.step = (c.step + 1) % 8
			c.next = now + lat()
		}
	}
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		now += lat()
		emit(history.Op{Process: 0, Type: history.Invoke, F: history.FinalRead, Key: key})
		now += lat()
		emit(history.Op{Process: 0, Type: history.OK, F: history.FinalRead, Key: key, Value: history.IntValue(values[key])})
	}
}
