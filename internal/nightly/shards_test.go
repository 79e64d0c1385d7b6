package nightly

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// shardedWorkflow is what TestNightlyShardedJobs reads of the workflow.
type shardedWorkflow struct {
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		If       string
		Strategy struct {
			Matrix struct {
				Shard []int `yaml:"shard"`
			} `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestNightlyShardedJobs: the comparison and the version matrix run in the
// shards their strategy lists (one list each: --shard ${{ matrix.shard }}/
// ${{ strategy.job-total }}), each uploading its store under a name the
// merge job downloads and merges (even when a shard failed), which
// publishes the JUnit results. The compare job's own command, run with
// --plan for every shard of the list, deals every cell of the whole plan to
// exactly one shard.
func TestNightlyShardedJobs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, ".github/workflows/nightly.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf shardedWorkflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("nightly.yml: %v", err)
	}
	const shardArg = "--shard ${{ matrix.shard }}/${{ strategy.job-total }}"
	for _, tc := range []struct{ job, merge, artifact, command string }{
		{"compare", "compare-report", "compare-shard-", "locktorture compare"},
		{"versions", "versions-report", "versions-shard-", "make versions"},
	} {
		job, ok := wf.Jobs[tc.job]
		if !ok {
			t.Errorf("nightly.yml has no %s job", tc.job)
			continue
		}
		if n := len(job.Strategy.Matrix.Shard); n < 2 {
			t.Errorf("%s: strategy.matrix.shard lists %d shards", tc.job, n)
		}
		var run string
		uploads := false
		for _, st := range job.Steps {
			if strings.Contains(st.Run, tc.command) {
				run = st.Run
			}
			if strings.HasPrefix(st.Uses, "actions/upload-artifact@") && st.With["name"] == tc.artifact+"${{ matrix.shard }}" && st.With["path"] == "store/" {
				uploads = true
			}
		}
		if !strings.Contains(run, shardArg) {
			t.Errorf("%s: its %s step does not take %s: %q", tc.job, tc.command, shardArg, run)
		}
		if !uploads {
			t.Errorf("%s: no step uploads store/ as %s${{ matrix.shard }}", tc.job, tc.artifact)
		}
		m, ok := wf.Jobs[tc.merge]
		if !ok {
			t.Errorf("nightly.yml has no %s job", tc.merge)
			continue
		}
		if m.Needs != tc.job || m.If != "always()" {
			t.Errorf("%s: needs %v if %q, want needs %s if always() (a failed shard must still be merged, its cells missing)", tc.merge, m.Needs, m.If, tc.job)
		}
		var downloads, merges, junit bool
		for _, st := range m.Steps {
			downloads = downloads || (strings.HasPrefix(st.Uses, "actions/download-artifact@") && st.With["pattern"] == tc.artifact+"*" && st.With["path"] == "shards")
			merges = merges || strings.Contains(st.Run, "locktorture merge --store merged shards/"+tc.artifact+"*")
			junit = junit || (strings.Contains(st.Uses, "action-junit-report@") && st.With["report_paths"] == "merged/matrix/latest/junit.xml")
		}
		if !downloads || !merges || !junit {
			t.Errorf("%s: downloads the shards %v, merges them %v, publishes junit.xml %v", tc.merge, downloads, merges, junit)
		}
	}
	job := wf.Jobs["compare"]
	var run string
	for _, st := range job.Steps {
		if strings.Contains(st.Run, "locktorture compare") {
			run = strings.TrimSpace(st.Run)
		}
	}
	if run == "" || len(job.Strategy.Matrix.Shard) == 0 {
		return
	}
	// The job's own command, with --plan, once per shard.
	dir := t.TempDir()
	build := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(dir, "bin", "locktorture"), "./cmd/locktorture")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	plan := func(cmd string) []string {
		c := exec.CommandContext(t.Context(), "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", cmd+" --plan")
		c.Dir = dir
		out, err := c.Output()
		if err != nil {
			t.Fatalf("%s --plan: %v", cmd, err)
		}
		var cells []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, " / ") && !strings.HasPrefix(l, "not applicable: ") {
				cells = append(cells, l)
			}
		}
		return cells
	}
	whole := plan(strings.ReplaceAll(run, " "+shardArg, ""))
	var union []string
	total := len(job.Strategy.Matrix.Shard)
	for _, i := range job.Strategy.Matrix.Shard {
		cmd := strings.ReplaceAll(run, "${{ matrix.shard }}", fmt.Sprint(i))
		cmd = strings.ReplaceAll(cmd, "${{ strategy.job-total }}", fmt.Sprint(total))
		union = append(union, plan(cmd)...)
	}
	slices.Sort(whole)
	slices.Sort(union)
	if len(whole) == 0 || !slices.Equal(whole, union) {
		t.Errorf("the compare job's %d shards plan %d cells, the whole comparison %d: each must be in exactly one shard", total, len(union), len(whole))
	}
}
