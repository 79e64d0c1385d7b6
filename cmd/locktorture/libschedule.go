package main

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/locktorture/locktorture/matrix"
)

// libPart is one of the comparisons compare --library joins: the
// comparison as asked (module empty, run by this program), or a library's
// rows at one version (run by this program rebuilt against it). Its cells
// run in shares (compare --shard i/n), each share one process with one
// lane, side by side with the other parts' shares.
type libPart struct {
	name            string // a directory's name under parts/: "this", or MODULE@V escaped
	module, version string
	rows            []string
	// cells and est are its plan: how many cells, their estimated time
	// one at a time.
	cells int
	est   time.Duration
	// planned are its cells, as its comparison plans them (the rows as
	// this program names them, not ROW@V).
	planned []matrix.Planned
	// shards is how many shares its cells run in (1: the whole, no
	// --shard).
	shards int
	// bin runs it (this program, or the build); buildErr says why there
	// is none.
	bin      string
	buildErr error
	// codes are each share's exit code, once it ran (-1 before).
	codes []int
}

// label names a part for a person: "github.com/redis/rueidis@v1.0.69", or
// "the comparison as asked".
func (p *libPart) label() string {
	if p.module == "" {
		return "the comparison as asked"
	}
	return p.module + "@" + p.version
}

// newLibPart is a part with its planned cells.
func newLibPart(name, module, version string, rows []string, planned []matrix.Planned) *libPart {
	return &libPart{name: name, module: module, version: version, rows: rows, planned: planned, cells: len(planned), est: matrix.Total(planned)}
}

// minShare is the least estimated time a share of a part is cut to: each
// share is a process that plans, and writes a report, of its own.
const minShare = 20 * time.Second

// sharesPerLane is how many shares each lane gets, about: enough that the
// lanes end at about the same time however the estimates err, few enough
// that each share's start and report stay small beside its cells.
const sharesPerLane = 3

// shardParts says how many shares each part's cells run in, for lanes
// lanes: about sharesPerLane shares a lane in all, of about equal
// estimated time (no less than minShare, no more than a part's cells, and
// none larger than the comparison as asked's);
// the comparison as asked (which needs no build) in at least lanes shares,
// so that every lane has a cell from the start while the first version
// builds.
func shardParts(parts []*libPart, lanes int) {
	lanes = max(lanes, 1)
	var total time.Duration
	for _, p := range parts {
		total += p.est
	}
	size := total / time.Duration(sharesPerLane*lanes)
	// No share larger than the comparison as asked's (in one share a lane
	// at least): shares of one size pack the lanes evenly, where a few
	// large ones left over at the end leave lanes idle (measured: 4 lanes,
	// 5 versions, the last round 2 shares of 85 s on 4 lanes).
	for _, p := range parts {
		if p.module == "" {
			size = min(size, p.est/time.Duration(lanes))
		}
	}
	size = max(size, minShare)
	for _, p := range parts {
		k := int((p.est + size - 1) / size)
		if p.module == "" {
			k = max(k, lanes)
		}
		p.shards = max(1, min(k, p.cells))
		p.codes = slices.Repeat([]int{-1}, p.shards)
	}
}

// libShare is one share of a part to run.
type libShare struct {
	part  *libPart
	shard int // from 1
	est   time.Duration
}

// scheduleParts runs every part's shares, lanes at a time, longest first
// among those whose program is at hand: the comparison as asked's at once,
// a version's once build has built it. build is called for each part of a
// module, one at a time in the order given, while shares run; a part whose
// build fails (its buildErr) is left out and the others go on. run runs
// one share and returns its exit code (kept in the part's codes). It
// returns once every share that could run ran, or, when ctx is done, once
// those running and the build under way have stopped.
func scheduleParts(ctx context.Context, parts []*libPart, lanes int, build func(context.Context, *libPart) error, run func(context.Context, *libPart, int) int) {
	lanes = max(lanes, 1)
	type event struct {
		built *libPart  // a build ended
		ran   *libShare // a share ended
		code  int
		last  bool // no build is left
	}
	events := make(chan event)
	var ready []*libShare
	add := func(p *libPart) {
		for i := 1; i <= p.shards; i++ {
			ready = append(ready, &libShare{part: p, shard: i, est: p.est / time.Duration(p.shards)})
		}
		slices.SortStableFunc(ready, func(a, b *libShare) int { return cmp.Compare(b.est, a.est) })
	}
	var toBuild []*libPart
	for _, p := range parts {
		if p.module == "" {
			add(p)
		} else {
			toBuild = append(toBuild, p)
		}
	}
	go func() {
		for _, p := range toBuild {
			if err := ctx.Err(); err != nil {
				p.buildErr = err
			} else {
				p.buildErr = build(ctx, p)
			}
			events <- event{built: p}
		}
		events <- event{last: true}
	}()
	running, building := 0, true
	for {
		for running < lanes && len(ready) > 0 && ctx.Err() == nil {
			s := ready[0]
			ready = ready[1:]
			running++
			go func() { events <- event{ran: s, code: run(ctx, s.part, s.shard)} }()
		}
		if running == 0 && !building {
			return
		}
		ev := <-events
		switch {
		case ev.ran != nil:
			running--
			ev.ran.part.codes[ev.ran.shard-1] = ev.code
		case ev.built != nil:
			if ev.built.buildErr == nil {
				add(ev.built)
			}
		case ev.last:
			building = false
		}
	}
}
