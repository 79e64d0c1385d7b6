package checker

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/history"
)

// holdKey names the hold a process may have on one key.
type holdKey struct {
	process int
	key     string
}

// Holds returns every span in which a process believed it held a key: from
// its acquire ok to its next release invoke on that key (whatever the
// release's outcome), or to the end of the history (Open, ending at the last
// op's time). Acquires that completed fail or info are not holds. The fence
// and lease come from the acquire ok; an extend ok carrying lease_ms moves
// LeaseEnd to its own time plus that lease, and so does an acquire ok by a
// process that already holds the key (its hold goes on). Nemesis ops are
// ignored. The result is sorted by key, start and process.
func Holds(ops []history.Op) []Hold {
	ops = resolveTx(ops)
	var holds []Hold
	open := map[holdKey]int{} // index into holds
	var last int64
	for i := range ops {
		op := &ops[i]
		if op.Time > last {
			last = op.Time
		}
		if op.IsNemesis() {
			continue
		}
		switch op.F {
		case history.Acquire:
			if op.Type != history.OK {
				continue
			}
			hk := holdKey{op.Process, op.Key}
			if j, ok := open[hk]; ok {
				// Acquired again without a release: the client held the
				// key all along; the new grant only renews its lease.
				if op.LeaseMS != nil {
					holds[j].LeaseEnd = history.Int64(op.Time + *op.LeaseMS*1e6)
				}
				continue
			}
			h := Hold{Process: op.Process, Key: op.Key, Start: op.Time, Open: true}
			if op.Fence != nil {
				h.Fence = history.Int64(*op.Fence)
			}
			if op.LeaseMS != nil {
				h.LeaseMS = history.Int64(*op.LeaseMS)
				h.LeaseEnd = history.Int64(op.Time + *op.LeaseMS*1e6)
			}
			h.Nodes = grantNodes(op)
			open[hk] = len(holds)
			holds = append(holds, h)
		case history.Extend:
			if op.Type != history.OK || op.LeaseMS == nil {
				continue
			}
			if j, ok := open[holdKey{op.Process, op.Key}]; ok {
				holds[j].LeaseEnd = history.Int64(op.Time + *op.LeaseMS*1e6)
			}
		case history.Release:
			if op.Type != history.Invoke {
				continue
			}
			hk := holdKey{op.Process, op.Key}
			if j, ok := open[hk]; ok {
				holds[j].End = op.Time
				holds[j].Open = false
				delete(open, hk)
			}
		}
	}
	for _, j := range open {
		holds[j].End = last
	}
	slices.SortFunc(holds, func(a, b Hold) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Process, b.Process)
	})
	return holds
}

// grantNodes reads the servers that granted a quorum lock from an acquire
// ok's value ({"nodes": ["A", "B", "C"]}), if it has one.
func grantNodes(op *history.Op) []string {
	if len(op.Value) == 0 || op.Value[0] != '{' {
		return nil
	}
	var v struct {
		Nodes []string `json:"nodes"`
	}
	if json.Unmarshal(op.Value, &v) != nil {
		return nil
	}
	return v.Nodes
}
