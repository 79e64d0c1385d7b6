package matrix

import (
	"strings"

	"github.com/locktorture/locktorture/history"
)

// Recovery is how long after a run's faults ended the lock was granted
// again: from the last fault's end (the op that left no fault in force,
// while the clients ran) to the first grant after it. A lock its holder
// could not release (its session gone, its server cut off) stays taken
// until it expires or is freed, and this is where that shows. Granted is
// false when no grant came before the clients stopped (NS then runs to
// the clients' last op).
type Recovery struct {
	NS      int64 `json:"ns"`
	Granted bool  `json:"granted"`
}

// RecoveryOf measures a history's recovery; ok is false when the history
// has no fault that ended while the clients ran (no faults, or one that
// lasted the whole run: healed as the clients stopped, with no request
// after it).
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
	// A fault healed only as the clients stopped (one that lasted the
	// whole run) has no after: some client must have asked for something
	// after it ended.
	asked := false
	for _, op := range ops {
		if !op.IsNemesis() && op.Time > end && op.Type == history.Invoke && op.F != history.FinalRead {
			asked = true
			break
		}
	}
	if !asked {
		return Recovery{}, false
	}
	for _, op := range ops {
		if !op.IsNemesis() && op.Time > end && op.F == history.Acquire && op.Type == history.OK {
			return Recovery{NS: op.Time - end, Granted: true}, true
		}
	}
	return Recovery{NS: clientEnd - end}, true
}
