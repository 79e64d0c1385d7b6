package checker

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locktorture/locktorture/history"
)

// DefaultLinearizableTimeout is the time limit Linearizable uses when given zero.
const DefaultLinearizableTimeout = 30 * time.Second

// lockInput is one lock operation as porcupine sees it.
type lockInput struct {
	release bool
	process int
	key     string
	outcome history.Type // the completion's type, for the visualization
	fence   *int64
}

// free is the model state of a key nobody holds; otherwise it is the owner.
const free = -1

// lockModel is an owner-aware mutex of one key, in the client's belief: an
// acquire that completed ok needs the key free (or already owned by the same
// process) and makes the caller its owner; a release by the owner frees it,
// a release by anyone else changes nothing. The state is the owner, or free.
var lockModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return free },
	Step: func(state, input, _ any) (bool, any) {
		owner, in := state.(int), input.(lockInput)
		if in.release {
			if owner == in.process {
				return true, free
			}
			return true, owner
		}
		if owner == free || owner == in.process {
			return true, in.process
		}
		return false, owner
	},
	Hash: func(state any) uint64 { return uint64(state.(int) + 1) },
	DescribeOperation: func(input, _ any) string {
		in := input.(lockInput)
		f := history.Acquire
		if in.release {
			f = history.Release
		}
		return fmt.Sprintf("p%d %s %s -> %s%s", in.process, f, in.key, in.outcome, fenceSuffix(in.fence))
	},
	DescribeState: func(state any) string {
		if owner := state.(int); owner != free {
			return fmt.Sprintf("held by p%d", owner)
		}
		return "free"
	},
}

// partitionByKey splits lock operations by key, in order of keys.
func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(lockInput).key
		byKey[k] = append(byKey[k], op)
	}
	out := make([][]porcupine.Operation, 0, len(byKey))
	for _, k := range sortedKeys(byKey) {
		out = append(out, byKey[k])
	}
	return out
}

// lockOperations turns a history into porcupine operations, by key. Only
// acquires that completed ok are kept (a failed or indeterminate acquire gave
// the client no hold); every release is kept, whatever its outcome, since the
// client stops believing it holds the lock when it invokes one. A release
// still pending at the end returns at the last op's time. Other ops are not
// lock operations.
func lockOperations(ops []history.Op) map[string][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	pending := map[int]*history.Op{} // each process's outstanding lock invoke
	var last int64
	add := func(inv *history.Op, outcome history.Type, ret int64) {
		in := lockInput{release: inv.F == history.Release, process: inv.Process, key: inv.Key, outcome: outcome, fence: inv.Fence}
		byKey[inv.Key] = append(byKey[inv.Key], porcupine.Operation{
			ClientId: inv.Process, Input: in, Call: inv.Time, Return: ret,
		})
	}
	for i := range ops {
		op := &ops[i]
		last = max(last, op.Time)
		if op.IsNemesis() || (op.F != history.Acquire && op.F != history.Release) {
			continue
		}
		if op.Type == history.Invoke {
			pending[op.Process] = op
			continue
		}
		inv, ok := pending[op.Process]
		if !ok || inv.F != op.F || inv.Key != op.Key {
			continue
		}
		delete(pending, op.Process)
		if op.F == history.Acquire && op.Type != history.OK {
			continue
		}
		if op.Fence != nil && op.F == history.Acquire {
			c := *inv
			c.Fence = op.Fence
			inv = &c
		}
		add(inv, op.Type, op.Time)
	}
	for _, inv := range pending {
		if inv.F == history.Release {
			add(inv, history.Info, last)
		}
	}
	return byKey
}

// Linearizable asks porcupine whether the lock operations of every key are
// linearizable with respect to an owner-aware mutex (see lockModel). Keys are
// checked independently and in parallel, within timeout overall (zero means
// DefaultLinearizableTimeout) and while ctx lasts. A key found illegal makes
// the result invalid (BadKeys); otherwise a key that ran out of time makes it
// unknown (UnknownKeys).
func Linearizable(ctx context.Context, ops []history.Op, timeout time.Duration) *LinearizableResult {
	if timeout <= 0 {
		timeout = DefaultLinearizableTimeout
	}
	res := &LinearizableResult{Valid: Valid, TimeoutMS: timeout.Milliseconds()}
	byKey := lockOperations(ops)
	keys := sortedKeys(byKey)
	res.Keys = len(keys)
	for _, k := range keys {
		res.Ops += len(byKey[k])
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	type verdict struct {
		key string
		r   porcupine.CheckResult
	}
	results := make(chan verdict, len(keys))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, k := range keys {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			left := time.Until(deadline)
			if left <= 0 || ctx.Err() != nil {
				results <- verdict{k, porcupine.Unknown}
				return
			}
			results <- verdict{k, porcupine.CheckOperationsTimeout(lockModel, byKey[k], left)}
		}()
	}
	seen := map[string]bool{}
	for range keys {
		select {
		case v := <-results:
			seen[v.key] = true
			switch v.r {
			case porcupine.Illegal:
				res.BadKeys = append(res.BadKeys, v.key)
			case porcupine.Unknown:
				res.UnknownKeys = append(res.UnknownKeys, v.key)
			}
		case <-ctx.Done():
			for _, k := range keys {
				if !seen[k] {
					seen[k] = true
					res.UnknownKeys = append(res.UnknownKeys, k)
				}
			}
			res.Error = fmt.Errorf("linearizable: %w", ctx.Err()).Error()
		}
		if ctx.Err() != nil {
			break
		}
	}
	sort.Strings(res.BadKeys)
	sort.Strings(res.UnknownKeys)
	switch {
	case len(res.BadKeys) > 0:
		res.Valid = Invalid
	case len(res.UnknownKeys) > 0:
		res.Valid = Unknown
	}
	return res
}

// LinearizableVisualization writes porcupine's interactive HTML view of the
// history's lock operations, one partition per key, to w. It runs porcupine
// in verbose mode (with DefaultLinearizableTimeout), which costs more than
// Linearizable; the page grows with the history.
func LinearizableVisualization(ops []history.Op, w io.Writer) error {
	var all []porcupine.Operation
	byKey := lockOperations(ops)
	for _, k := range sortedKeys(byKey) {
		all = append(all, byKey[k]...)
	}
	_, info := porcupine.CheckOperationsVerbose(lockModel, all, DefaultLinearizableTimeout)
	if err := porcupine.Visualize(lockModel, info, w); err != nil {
		return fmt.Errorf("linearizability visualization: %w", err)
	}
	return nil
}
