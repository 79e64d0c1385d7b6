package matrix

import (
	"strings"

	"github.com/locktorture/locktorture/history"
)

// Recovery is how long the lock had no holder after a run's faults ended:
// from the last fault's end (the op that left no fault in force, while
// the clients ran) to the first grant after it, or zero when some client
// held the lock at that moment. Granted is false when no grant came
// before the clients stopped (NS then runs to the clients' last op).
type Recovery struct {
	NS      int64 `json:"ns"`
	Granted bool  `json:"granted"`
}

// RecoveryOf measures a history's recovery; ok is false when the history
// has no fault that ended while the clients ran (no faults, or one that
// lasted the whole run).
func RecoveryOf(ops []history.Op) (r Recovery, ok bool) {
	clientEnd := int64(-1)
	for _, op := range ops {
		if !op.IsNemesis() && op.F != history.FinalRead {
			clientEnd = max(clientEnd, op.Time)
		}
	}
	open, end := 0, int64(-1)
	for _, op := range ops {
		if !op.IsNemesis() || op.Time > clientEnd {
			continue
		}
		switch {
		case strings.HasPrefix(op.F, "start-"):
			open++
		case strings.HasPrefix(op.F, "stop-"):
			open = max(open-1, 0)
		}
		if open == 0 {
			end = op.Time
		}
	}
	if end < 0 || open > 0 {
		return Recovery{}, false
	}
	type pk struct {
		p int
		k string
	}
	held := map[pk]bool{}
	for _, op := range ops {
		if op.IsNemesis() || op.Time > end {
			continue
		}
		switch {
		case op.F == history.Acquire && op.Type == history.OK:
			held[pk{op.Process, op.Key}] = true
		case op.F == history.Release && op.Type == history.Invoke:
			delete(held, pk{op.Process, op.Key})
		}
	}
	if len(held) > 0 {
		return Recovery{Granted: true}, true
	}
	for _, op := range ops {
		if !op.IsNemesis() && op.Time > end && op.F == history.Acquire && op.Type == history.OK {
			return Recovery{NS: op.Time - end, Granted: true}, true
		}
	}
	return Recovery{NS: clientEnd - end}, true
}
