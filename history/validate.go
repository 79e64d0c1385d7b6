package history

import (
	"context"
	"fmt"
)

// Validate checks the structural rules of a history: indexes from 0 without
// gaps, time never going backwards, at most one outstanding op per client
// process, and every completion matching its process's open invocation.
// ctx is checked periodically so huge histories can be abandoned.
func Validate(ctx context.Context, ops []Op) error {
	open := map[int]string{}
	var lastT int64
	for i := range ops {
		if i%65536 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		op := &ops[i]
		if op.Index != int64(i) {
			return fmt.Errorf("history: op %d has index %d", i, op.Index)
		}
		if op.Time < lastT {
			return fmt.Errorf("history: op %d: time goes backwards (%d < %d)", i, op.Time, lastT)
		}
		lastT = op.Time
		if op.IsNemesis() {
			continue
		}
		switch op.Type {
		case Invoke:
			if f, ok := open[op.Process]; ok {
				return fmt.Errorf("history: op %d: process %d invokes %s while %s is outstanding", i, op.Process, op.F, f)
			}
			open[op.Process] = op.F
		case OK, Fail, Info:
			f, ok := open[op.Process]
			if !ok {
				return fmt.Errorf("history: op %d: process %d completes %s with nothing outstanding", i, op.Process, op.F)
			}
			if f != op.F {
				return fmt.Errorf("history: op %d: process %d completes %s but invoked %s", i, op.Process, op.F, f)
			}
			delete(open, op.Process)
		default:
			return fmt.Errorf("history: op %d: unknown type %q", i, op.Type)
		}
	}
	return nil
}
