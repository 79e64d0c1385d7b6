package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// planShards runs `ARGS --plan --shard i/n` for every i and returns each
// shard's cells and the estimate each plan prints for every shard (they
// must agree).
func planShards(t *testing.T, n int, args ...string) (cells [][]string, ests []time.Duration) {
	t.Helper()
	line := regexp.MustCompile(`^shard (\d+)/(\d+): (\d+) cells?, estimated (\S+)`)
	for i := 1; i <= n; i++ {
		code, out, stderr := runCLI(t, append(slices.Clone(args), "--plan", "--shard", strconv.Itoa(i)+"/"+strconv.Itoa(n))...)
		if code != exitValid {
			t.Fatalf("shard %d/%d: exit %d\n%s\n%s", i, n, code, out, stderr)
		}
		var mine []string
		var got []time.Duration
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			m := line.FindStringSubmatch(l)
			switch {
			case m != nil:
				d, err := time.ParseDuration(m[4])
				if err != nil {
					t.Fatalf("%q: %v", l, err)
				}
				got = append(got, d)
				if m[1] == strconv.Itoa(i) && !strings.Contains(l, "this shard") {
					t.Errorf("shard %d/%d's own line does not say so: %q", i, n, l)
				}
				if k, _ := strconv.Atoi(m[3]); m[1] == strconv.Itoa(i) && k != len(mine) {
					t.Errorf("shard %d/%d: %d cells listed, its line says %d", i, n, len(mine), k)
				}
			case strings.HasPrefix(l, "not applicable: "), strings.HasPrefix(l, "shards differ"):
			default:
				mine = append(mine, l)
			}
		}
		if len(got) != n {
			t.Fatalf("shard %d/%d: %d shard estimates, want %d:\n%s", i, n, len(got), n, out)
		}
		if ests == nil {
			ests = got
		} else if !slices.Equal(ests, got) {
			t.Errorf("shard %d/%d gives other estimates %v than shard 1's %v", i, n, got, ests)
		}
		cells = append(cells, mine)
	}
	return cells, ests
}

// TestComparePlanShards: the full comparison's plan in three shards: every
// cell in exactly one shard, the shards' estimates within 15% of each
// other, and each shard's --plan listing its cells and every shard's
// estimate. Nothing runs.
func TestComparePlanShards(t *testing.T) {
	code, whole, stderr := runCLI(t, "compare", "--plan")
	if code != exitValid {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var all []string
	for _, l := range strings.Split(strings.TrimSpace(whole), "\n") {
		if strings.Contains(l, " / ") && !strings.HasPrefix(l, "not applicable: ") {
			all = append(all, l)
		}
	}
	if !regexp.MustCompile(`(?m)^\d+ cells, estimated \S+ one at a time`).MatchString(whole) {
		t.Errorf("the whole plan gives no estimate:\n%s", tail(whole))
	}
	cells, ests := planShards(t, 3, "compare")
	var union []string
	for _, c := range cells {
		union = append(union, c...)
	}
	slices.Sort(union)
	slices.Sort(all)
	if !slices.Equal(union, all) {
		t.Errorf("the three shards hold %d cells, the plan %d (each must be in exactly one)", len(union), len(all))
	}
	lo, hi := slices.Min(ests), slices.Max(ests)
	t.Logf("compare, 3 shards: %v (%d cells); spread %.1f%%", ests, len(all), 100*float64(hi-lo)/float64(hi))
	if float64(hi-lo) > 0.15*float64(hi) {
		t.Errorf("the shards' estimates %v differ by more than 15%%", ests)
	}
}

// tail is the last lines of s.
func tail(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(ls[max(0, len(ls)-5):], "\n")
}

// TestVersionsPlanShards: the version matrix (make versions: its scenarios
// over versions.debian.yaml) in three shards: every cell in exactly one,
// the shards' estimates within 15% of each other. Nothing runs.
func TestVersionsPlanShards(t *testing.T) {
	args := []string{"matrix", "--servers", "docker", "--versions", "../../versions.debian.yaml",
		"--scenarios", "baseline,kleppmann-pause,pg-terminate,etcd-pause,zk-pause,failover"}
	code, whole, stderr := runCLI(t, append(slices.Clone(args), "--plan")...)
	if code != exitValid {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var all []string
	for _, l := range strings.Split(strings.TrimSpace(whole), "\n") {
		if strings.Contains(l, " / ") && !strings.HasPrefix(l, "not applicable: ") {
			all = append(all, l)
		}
	}
	cells, ests := planShards(t, 3, args...)
	var union []string
	for _, c := range cells {
		union = append(union, c...)
	}
	slices.Sort(union)
	slices.Sort(all)
	if len(all) == 0 || !slices.Equal(union, all) {
		t.Errorf("the three shards hold %d cells, the plan %d (each must be in exactly one)", len(union), len(all))
	}
	if !strings.Contains(strings.Join(all, "\n"), " @ trixie (seed") {
		t.Errorf("no version set's cell in the plan:\n%s", tail(whole))
	}
	lo, hi := slices.Min(ests), slices.Max(ests)
	t.Logf("versions, 3 shards: %v (%d cells); spread %.1f%%", ests, len(all), 100*float64(hi-lo)/float64(hi))
	if float64(hi-lo) > 0.15*float64(hi) {
		t.Errorf("the shards' estimates %v differ by more than 15%%", ests)
	}
}
