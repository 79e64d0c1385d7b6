package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/internal/libversion"
)

// TestShardParts: about sharesPerLane shares a lane, none under minShare
// nor more than a part's cells; the comparison as asked in at least one
// share a lane.
func TestShardParts(t *testing.T) {
	part := func(module string, cells int, est time.Duration) *libPart {
		return &libPart{module: module, cells: cells, est: est}
	}
	tests := []struct {
		name  string
		parts []*libPart
		lanes int
		want  []int
	}{
		{"6 equal parts, 2 lanes", []*libPart{part("", 31, 169*time.Second), part("m", 31, 169*time.Second), part("m", 31, 169*time.Second), part("m", 31, 169*time.Second), part("m", 31, 169*time.Second), part("m", 31, 169*time.Second)}, 2, []int{2, 2, 2, 2, 2, 2}},
		{"6 equal parts, 4 lanes", []*libPart{part("", 31, 169*time.Second), part("m", 31, 169*time.Second), part("m", 31, 169*time.Second), part("m", 31, 169*time.Second), part("m", 31, 169*time.Second), part("m", 31, 169*time.Second)}, 4, []int{4, 4, 4, 4, 4, 4}},
		{"a large comparison as asked, 1 version", []*libPart{part("", 742, 4000*time.Second), part("m", 31, 169*time.Second)}, 4, []int{12, 1}},
		{"short cells: no share under minShare", []*libPart{part("", 3, 9*time.Second), part("m", 3, 9*time.Second)}, 4, []int{3, 1}},
		{"one lane", []*libPart{part("", 31, 169*time.Second), part("m", 31, 169*time.Second)}, 1, []int{2, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shardParts(tt.parts, tt.lanes)
			var got []int
			for _, p := range tt.parts {
				got = append(got, p.shards)
				if len(p.codes) != p.shards {
					t.Errorf("%d codes for %d shares", len(p.codes), p.shards)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("shares %v, want %v", got, tt.want)
			}
		})
	}
}

// TestScheduleParts: the comparison as asked runs while the versions
// build; a version that does not build is left out and the others run;
// never more shares at once than lanes; every other share runs once.
func TestScheduleParts(t *testing.T) {
	for _, lanes := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(lanes, " lanes"), func(t *testing.T) {
			parts := []*libPart{
				{name: "this", cells: 10, est: 100 * time.Second},
				{name: "a", module: "m", version: "v1", cells: 10, est: 100 * time.Second},
				{name: "b", module: "m", version: "v2", cells: 10, est: 100 * time.Second},
				{name: "c", module: "m", version: "v3", cells: 10, est: 100 * time.Second},
			}
			shardParts(parts, lanes)
			thisRan := make(chan struct{})
			var once sync.Once
			var mu sync.Mutex
			running, most := 0, 0
			ran := map[string]int{}
			var built []string
			build := func(ctx context.Context, p *libPart) error {
				if p.version == "v1" {
					<-thisRan // the first build ends only once a share of the comparison as asked has started
				}
				built = append(built, p.version)
				if p.version == "v2" {
					return fmt.Errorf("%w at v2: no such method", libversion.ErrNoBuild)
				}
				return nil
			}
			run := func(ctx context.Context, p *libPart, shard int) int {
				mu.Lock()
				running++
				most = max(most, running)
				ran[fmt.Sprintf("%s %d/%d", p.name, shard, p.shards)]++
				mu.Unlock()
				if p.module == "" {
					once.Do(func() { close(thisRan) })
				}
				mu.Lock()
				running--
				mu.Unlock()
				return exitValid
			}
			scheduleParts(context.Background(), parts, lanes, build, run)
			if !slices.Equal(built, []string{"v1", "v2", "v3"}) {
				t.Errorf("built %v, want v1, v2, v3 in turn", built)
			}
			if most > lanes {
				t.Errorf("%d shares at once, lanes %d", most, lanes)
			}
			for _, p := range parts {
				for i := 1; i <= p.shards; i++ {
					key := fmt.Sprintf("%s %d/%d", p.name, i, p.shards)
					want := 1
					if p.version == "v2" {
						want = 0
					}
					if ran[key] != want {
						t.Errorf("%s ran %d times, want %d", key, ran[key], want)
					}
					if want == 1 && p.codes[i-1] != exitValid {
						t.Errorf("%s: code %d kept", key, p.codes[i-1])
					}
				}
			}
			if !errors.Is(parts[2].buildErr, libversion.ErrNoBuild) || parts[1].buildErr != nil || parts[3].buildErr != nil {
				t.Errorf("build errors %v %v %v", parts[1].buildErr, parts[2].buildErr, parts[3].buildErr)
			}
		})
	}
}

// TestSchedulePartsCancelled: once ctx is done no share starts, and the
// builds left are not begun.
func TestSchedulePartsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	parts := []*libPart{
		{name: "this", cells: 4, est: 40 * time.Second},
		{name: "a", module: "m", version: "v1", cells: 4, est: 40 * time.Second},
		{name: "b", module: "m", version: "v2", cells: 4, est: 40 * time.Second},
	}
	shardParts(parts, 1)
	var runs, builds int
	build := func(ctx context.Context, p *libPart) error {
		builds++
		cancel() // interrupted during the first build
		return ctx.Err()
	}
	run := func(ctx context.Context, p *libPart, shard int) int {
		runs++
		return exitValid
	}
	scheduleParts(ctx, parts, 1, build, run)
	if builds != 1 {
		t.Errorf("%d builds begun, want 1", builds)
	}
	if !errors.Is(parts[2].buildErr, context.Canceled) {
		t.Errorf("the build not begun: %v", parts[2].buildErr)
	}
	if runs > parts[0].shards {
		t.Errorf("%d shares ran, at most the comparison as asked's %d", runs, parts[0].shards)
	}
}
