package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/reports"
)

// fileCheck is what checkFile finds.
type fileCheck struct {
	res *checker.Results
	// first are the history's first maxReportOps ops, for reportOps;
	// density counts all of it, for a long run's report.
	first   []history.Op
	density *reports.Density
	// truncated is the error of a last line cut off and dropped.
	truncated error
}

// checkFile checks the history in path in one streaming pass (see
// checker.Stream), in memory bounded by its keys and clients rather than
// its length, as check would check it whole. A line that breaks the
// history contract is bad input naming it; a last line cut off (the harness
// was killed) is dropped and truncated says so. A history the stream
// cannot take (one the harness never records: a process with two ops in
// flight, time going backwards) is read whole and checked by check.
// The report's ops come from the same pass (see fileCheck).
// ex, when not nil, follows the same pass (see exerciseTally).
func checkFile(ctx context.Context, path string, names []string, opt Options, ex *exerciseTally) (fc fileCheck, err error) {
	copt := checker.Options{LinearizableTimeout: opt.LinearizableTimeout}
	st, err := checker.NewStream(ctx, names, copt)
	if err != nil {
		return fc, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	lint := history.Linter{Max: checker.MaxWarnings}
	var n int
	var checked, finalReads bool
	var failures failureTally
	keep := fc.keeper(path)
	fc.truncated, err = readOps(ctx, path, -1, func(op *history.Op) {
		n++
		keep(op)
		st.Add(op)
		lint.Add(op)
		failures.add(op)
		ex.add(op)
		if op.Type == history.OK && (op.F == history.Acquire || op.F == history.Write) {
			checked = true
		}
		finalReads = finalReads || op.F == history.FinalRead
	})
	if err != nil {
		return fc, err
	}
	cs, err := st.Result(func(add func(*history.Op)) error {
		_, err := readOps(ctx, path, n, add)
		return err
	})
	if errors.Is(err, checker.ErrNotStreamable) {
		ops, rerr := history.ReadFileContract(path)
		if rerr != nil && !errors.Is(rerr, history.ErrTruncated) {
			return fc, fmt.Errorf("%w: %w", ErrBadInput, rerr)
		}
		fc.res, err = check(ctx, ops, names, opt)
		return fc, err
	}
	if err != nil {
		return fc, err
	}
	r := &checker.Results{Checkers: cs, Ops: n}
	for _, p := range lint.Problems() {
		r.Warnings = append(r.Warnings, p.String())
	}
	r.WarningCount = lint.Count()
	fc.res = judge(r, checked, finalReads)
	noteFailures(fc.res, &failures)
	return fc, nil
}

// keeper starts fc's density and returns what keeps, of each op in turn,
// what the report needs: the density, and every op of a history too short
// to hold maxReportOps ops (see firstRoom). A longer one's ops are read
// again for its report (reportOps): kept through the pass, its first
// maxReportOps (13.6 MB) were half of what analyze held while it checked,
// and so a quarter of its peak memory. The first ops get their room at
// once, not by appending: growing a slice a quarter at a time allocated,
// cleared and copied five times its size.
func (fc *fileCheck) keeper(path string) func(op *history.Op) {
	fc.density = reports.NewDensity()
	if room := firstRoom(path); room < maxReportOps {
		fc.first = history.MakeOps(room)
	}
	return func(op *history.Op) {
		if len(fc.first) < cap(fc.first) {
			fc.first = append(fc.first, *op)
		}
		fc.density.Add(op)
	}
}

// minOpBytes is the shortest line an op of the contract takes: its five
// required fields, each value one character, and the newline.
const minOpBytes = len(`{"index":0,"time":0,"process":0,"type":"ok","f":"x"}` + "\n")

// firstRoom is how many of its first ops keeper makes room for before
// reading the history in path: maxReportOps, or fewer when the file cannot
// hold that many; none when it cannot be read (readOps says why).
func firstRoom(path string) int {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return int(min(int64(maxReportOps), st.Size()/int64(minOpBytes)+1))
}

// readOps feeds the first limit ops of the history in path (every one when
// limit is negative) to each, holding them to the contract. A last line
// cut off ends the history: truncated is its error. The ops are decoded on
// a goroutine of their own, a batch at a time, while each runs: op is only
// valid during the call.
func readOps(ctx context.Context, path string, limit int, each func(op *history.Op)) (truncated, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	defer f.Close()
	const batch = 1024
	full := make(chan []history.Op, 4)
	free := make(chan []history.Op, 6)
	for range cap(free) {
		free <- make([]history.Op, 0, batch)
	}
	done := make(chan struct{})
	defer close(done)
	var rerr error // the reader's, set before full is closed
	go func() {
		defer close(full)
		rd := history.NewReader(f)
		rd.Contract = true
		var buf []history.Op
		for i := 0; limit < 0 || i < limit; i++ {
			if buf == nil {
				select {
				case buf = <-free:
				case <-done:
					return
				}
			}
			if i&0xffff == 0 && ctx.Err() != nil {
				rerr = ctx.Err()
				break
			}
			op, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rerr = err
				break
			}
			buf = append(buf, op)
			if len(buf) == batch {
				select {
				case full <- buf:
				case <-done:
					return
				}
				buf = nil
			}
		}
		if len(buf) > 0 {
			select {
			case full <- buf:
			case <-done:
			}
		}
	}()
	for ops := range full {
		for i := range ops {
			each(&ops[i])
		}
		clear(ops)
		free <- ops[:0]
	}
	switch {
	case rerr == nil:
		return nil, nil
	case errors.Is(rerr, history.ErrTruncated):
		return fmt.Errorf("%s: %w", path, rerr), nil
	case ctx.Err() != nil && errors.Is(rerr, ctx.Err()):
		return nil, rerr
	}
	return nil, fmt.Errorf("%w: %s: %w", ErrBadInput, path, rerr)
}

// scanFile reads the history in path once for its report alone, as
// checkFile does without checking: its first ops and its density, and
// how many ops it has.
func scanFile(ctx context.Context, path string) (fc fileCheck, n int, err error) {
	keep := fc.keeper(path)
	fc.truncated, err = readOps(ctx, path, -1, func(op *history.Op) {
		n++
		keep(op)
	})
	return fc, n, err
}

// maxReportOps is the most ops a run's report is drawn from: a longer
// history's report shows a stretch of it (see reportOps). A variable for
// tests.
var maxReportOps = 100_000

// reportOps returns the ops the report of the history in path (of n ops)
// is drawn from: all of them when there are at most maxReportOps; else
// maxReportOps of them around the first violation res lists (or from the
// start), and what the report says of the whole run (nil for a history
// drawn whole). When the stretch is among the first ops checkFile kept
// (fc), the file is not read again; else it is read as far as the stretch
// goes.
func reportOps(ctx context.Context, path string, res *checker.Results, fc fileCheck) ([]history.Op, *longRun, error) {
	n, first := res.Ops, fc.first
	if n <= len(first) {
		return first[:n], nil, nil
	}
	if n <= maxReportOps { // drawn whole, but not kept (see keeper)
		ops := history.MakeOps(n)
		_, err := readOps(ctx, path, n, func(op *history.Op) { ops = append(ops, *op) })
		if err != nil {
			return nil, nil, err
		}
		return ops, nil, nil
	}
	long := func(ops []history.Op, seen int, what string) *longRun {
		return &longRun{excerpt: excerptLine(ops, seen, what), density: fc.density}
	}
	at, what := firstViolation(res)
	half := maxReportOps / 2
	if len(first) >= maxReportOps {
		from, to := 0, maxReportOps
		if what != "" {
			i, _ := slices.BinarySearchFunc(first, at, func(op history.Op, t int64) int { return cmp.Compare(op.Time, t) })
			from, to = max(0, i-half), max(0, i-half)+maxReportOps
		}
		if to <= len(first) {
			return first[from:to], long(first[from:to], n, what), nil
		}
	}
	ring := history.MakeOps(maxReportOps)
	start, after := 0, -1 // ring[start:] then ring[:start] before at; after counts ops kept from at
	seen, limit := 0, n
	if what == "" { // the first ops: read no further
		limit = maxReportOps
	}
	_, err := readOps(ctx, path, limit, func(op *history.Op) {
		seen++
		if after < 0 && op.Time >= at && what != "" {
			after = 0
			ring = append(ring[start:], ring[:start]...)
		}
		switch {
		case after >= 0 && len(ring) < maxReportOps: // half, or more when fewer came before
			ring = append(ring, *op)
			after++
		case after < 0 && what != "":
			if len(ring) < half {
				ring = append(ring, *op)
			} else {
				ring[start] = *op
				start = (start + 1) % half
			}
		case after < 0 && len(ring) < maxReportOps:
			ring = append(ring, *op)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if after < 0 && what != "" { // the violation was past the end: the last ops
		ring = append(ring[start:], ring[:start]...)
	}
	if len(ring) == 0 {
		return nil, nil, nil
	}
	if limit < n {
		seen = n // the ops past the stretch, not read
	}
	return ring, long(ring, seen, what), nil
}

// longRun is what the report of a run too long to draw op by op says of
// all of it.
type longRun struct {
	excerpt string           // which stretch the op-by-op plots show
	density *reports.Density // the whole run, counted
}

// apply puts it in the report's info (nothing for a run drawn whole).
func (l *longRun) apply(info *reports.RunInfo) {
	if l != nil {
		info.Excerpt, info.Density = l.excerpt, l.density
	}
}

// excerptLine says which stretch of a history of n ops the report shows.
func excerptLine(ops []history.Op, n int, what string) string {
	where := "its first ops"
	if what != "" {
		where = "around the first " + what
	}
	return fmt.Sprintf("a long run: the plots show ops %d–%d of %d (%s)", ops[0].Index, ops[len(ops)-1].Index, n, where)
}

// firstViolation returns the time of the earliest violation res lists, and
// what it was ("" when none).
func firstViolation(res *checker.Results) (int64, string) {
	at, what := int64(0), ""
	take := func(t int64, w string) {
		if what == "" || t < at {
			at, what = t, w
		}
	}
	c := &res.Checkers
	if c.Mutex != nil && len(c.Mutex.Violations) > 0 {
		take(c.Mutex.Violations[0].Start, "overlap")
	}
	if c.Fencing != nil && len(c.Fencing.Violations) > 0 {
		take(c.Fencing.Violations[0].Time, "stale write")
	}
	return at, what
}
