package nightly

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// bareImage is what the job's `container: debian:bookworm` stands for here:
// the same minbase root, imported without a registry (make images BARE=1).
const bareImage = "locktorture-bare:bookworm"

// cells are the job's matrix narrowed to one cell of every server kind: each
// scenario with the one backend named, keyed by the kind it starts.
var cells = map[string]struct{ scenario, backend string }{
	"redis":     {"kleppmann-pause", "redis-token"},
	"sentinel":  {"failover", "redis-token"},
	"postgres":  {"pg-pause", "pg-advisory"},
	"pgbouncer": {"pg-bouncer-transaction", "pg-advisory"},
	"mariadb":   {"mysql-pause", "mysql-get-lock"},
	"etcd":      {"etcd-pause", "etcd"},
	"zookeeper": {"zk-pause", "zookeeper"},
}

// backendOf is the first built-in backend, by name, whose servers are of
// kind (not exec, whose servers are the user's choice, nor a program row,
// whose client libraries the job does not install); "" when none.
func backendOf(kind string) string {
	for _, name := range backends.Names() {
		info, _, err := backends.Lookup(name)
		if err != nil || name == scenarios.ExecBackend || slices.Contains(backends.ProgramNames(), name) {
			continue
		}
		if slices.Contains(info.Kinds, kind) {
			return name
		}
	}
	return ""
}

// workflow is the part of a GitHub Actions workflow the test reads.
type workflow struct {
	Jobs map[string]struct {
		Container any `yaml:"container"`
		Steps     []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// expr is a workflow expression, ${{ ... }}.
var expr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// TestNightlyMatrixJob runs the nightly workflow's matrix job, step by step as
// written, in a bare Debian 12 container: the steps install what they need
// (make deps, from the kind registry), build, and run the matrix, here one
// cell of every server kind, which must come out as expected. A package the
// registry forgets, or a step that only works on a developer's machine, fails
// it.
func TestNightlyMatrixJob(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the nightly job's steps take minutes")
	}
	testenv.RequireDocker(t, bareImage)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	b, err := os.ReadFile(filepath.Join(root, ".github/workflows/nightly.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("nightly.yml: %v", err)
	}
	job, ok := wf.Jobs["matrix"]
	if !ok {
		t.Fatal("nightly.yml has no matrix job")
	}
	if job.Container != "debian:bookworm" {
		t.Fatalf("the matrix job runs in %v; this test stands %s for debian:bookworm only", job.Container, bareImage)
	}

	// Every kind the registry knows has its cell: the one named above, or
	// the baseline over the first built-in backend that runs it. A kind no
	// built-in backend runs has none: make deps installs its packages all
	// the same, and the run would have nothing to start it. Sentinel, part
	// of the redis kind, has its own.
	cells := maps.Clone(cells)
	for _, k := range cluster.KindNames() {
		if _, ok := cells[k]; ok {
			continue
		}
		if b := backendOf(k); b != "" {
			cells[k] = struct{ scenario, backend string }{"baseline", b}
		} else {
			t.Logf("server kind %s: no built-in backend runs it, so no cell", k)
		}
	}
	var kinds, scs, bks []string
	for k := range cells {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		scs = append(scs, cells[k].scenario)
		bks = append(bks, cells[k].backend)
	}
	scs, bks = uniq(scs), uniq(bks)

	ctx := t.Context()
	removeOrphans(t)
	name := fmt.Sprintf("locktorture-nightly-test-%d", os.Getpid())
	args := []string{"run", "-d", "--name", name,
		"--label", "org.locktorture.test=nightly",
		"-v", goEnv(t, "GOROOT") + ":/usr/local/go:ro",
		"-e", "PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"-e", "GOTOOLCHAIN=local", "-e", "GOFLAGS=-mod=readonly",
		"-w", "/w",
	}
	// Modules come from this machine's module cache (setup-go's job there),
	// read-only; the build cache is shared when this test runs as root (the
	// container's files are root's).
	if mc := goEnv(t, "GOMODCACHE"); mc != "" {
		args = append(args, "-v", mc+":/gomod:ro", "-e", "GOMODCACHE=/gomod", "-e", "GOPROXY=off")
	}
	if gc := goEnv(t, "GOCACHE"); gc != "" && os.Getuid() == 0 {
		args = append(args, "-v", gc+":/gocache", "-e", "GOCACHE=/gocache")
	}
	args = append(args, bareImage, "sleep", "infinity")
	docker(ctx, t, args...)
	t.Cleanup(func() {
		_ = exec.Command("docker", "rm", "-f", name).Run()
	})

	for i, st := range job.Steps {
		label := st.Name
		if label == "" {
			label = st.Uses
		}
		switch {
		case strings.HasPrefix(st.Uses, "actions/checkout@"):
			// The checkout: this tree's files as git would give them.
			checkout(ctx, t, root, name)
			continue
		case strings.HasPrefix(st.Uses, "actions/setup-go@"):
			if st.With["go-version-file"] != "go.mod" {
				t.Fatalf("step %d: setup-go reads %q; this test gives it this machine's Go, which builds go.mod", i, st.With["go-version-file"])
			}
			continue
		case strings.HasPrefix(st.Uses, "actions/upload-artifact@"):
			continue
		case st.Uses != "":
			t.Fatalf("step %d (%s): this test does not know what %s does: teach it", i, label, st.Uses)
		}
		run := expr.ReplaceAllStringFunc(st.Run, func(m string) string {
			switch e := expr.FindStringSubmatch(m)[1]; e {
			case "matrix.shard", "strategy.job-total":
				return "1"
			default:
				t.Fatalf("step %d (%s): the test cannot stand in for ${{ %s }}", i, label, e)
				return ""
			}
		})
		if strings.Contains(run, "locktorture matrix") {
			run = strings.TrimSpace(run) + " --scenarios " + strings.Join(scs, ",") + " --backends " + strings.Join(bks, ",")
		}
		t.Logf("step %d: %s", i, label)
		out, err := exec.CommandContext(ctx, "docker", "exec", name,
			"bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run).CombinedOutput()
		if err != nil {
			t.Fatalf("step %d (%s) failed: %v\n$ %s\n%s", i, label, err, run, tail(out, 60))
		}
		if strings.Contains(run, "locktorture matrix") {
			t.Logf("%s", tail(out, 30))
		}
	}

	// The matrix's results: every narrowed cell ran and is as expected.
	out := docker(ctx, t, "exec", name, "cat", "store/matrix/latest/results.json")
	var res struct {
		Valid bool `json:"valid"`
		Cells []struct {
			Scenario   string `json:"scenario"`
			Backend    string `json:"backend"`
			Verdict    string `json:"verdict"`
			Expected   string `json:"expected"`
			AsExpected bool   `json:"as_expected"`
			Why        string `json:"why"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	ran := map[[2]string]bool{}
	for _, c := range res.Cells {
		t.Logf("cell %s / %s: %s (expected %s)", c.Scenario, c.Backend, c.Verdict, c.Expected)
		if !c.AsExpected {
			t.Errorf("cell %s / %s: %s, expected %s: %s", c.Scenario, c.Backend, c.Verdict, c.Expected, c.Why)
		}
		ran[[2]string{c.Scenario, c.Backend}] = true
	}
	for _, k := range kinds {
		if c := cells[k]; !ran[[2]string{c.scenario, c.backend}] {
			t.Errorf("kind %s: cell %s / %s did not run", k, c.scenario, c.backend)
		}
	}
	if !res.Valid {
		t.Errorf("the matrix is not valid")
	}
	// Nothing the run started is left running in the container.
	if ps, err := exec.CommandContext(ctx, "docker", "exec", name, "sh", "-c",
		"for p in /proc/[0-9]*; do tr '\\0' ' ' <$p/cmdline; echo; done").Output(); err == nil {
		for _, l := range strings.Split(string(ps), "\n") {
			for _, srv := range []string{"redis-server", "postgres", "etcd ", "zookeeper", "mariadbd", "pgbouncer"} {
				if strings.Contains(l, srv) {
					t.Errorf("left running in the container after the job: %s", l)
				}
			}
		}
	}
	t.Logf("kinds covered: %s", strings.Join(kinds, ", "))
}

// removeOrphans removes the containers an earlier run of this test left
// behind when it was killed (its process, named in the container's name, is
// gone).
func removeOrphans(t *testing.T) {
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label=org.locktorture.test=nightly", "--format", "{{.Names}}").Output()
	if err != nil {
		return
	}
	for _, n := range strings.Fields(string(out)) {
		var pid int
		if _, err := fmt.Sscanf(n, "locktorture-nightly-test-%d", &pid); err != nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue // its test still runs
		}
		t.Logf("removing %s, left by a test that was killed", n)
		_ = exec.Command("docker", "rm", "-f", n).Run()
	}
}

// checkout copies the tree's files as a clean clone has them (tracked and
// new, not ignored) into the container's /w.
func checkout(ctx context.Context, t *testing.T, root, container string) {
	t.Helper()
	ls := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	files, err := ls.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var keep []byte
	for _, f := range bytes.Split(files, []byte{0}) {
		if len(f) == 0 {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, string(f))); err != nil {
			continue // deleted in the work tree
		}
		keep = append(append(keep, f...), 0)
	}
	tar := exec.CommandContext(ctx, "tar", "-C", root, "--null", "-T", "-", "-cf", "-")
	tar.Stdin = bytes.NewReader(keep)
	in := exec.CommandContext(ctx, "docker", "exec", "-i", container, "tar", "-C", "/w", "-xf", "-")
	pipe, err := tar.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in.Stdin = pipe
	var stderr bytes.Buffer
	in.Stderr = &stderr
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tar.Run(); err != nil {
		t.Fatalf("tar of the tree: %v", err)
	}
	if err := in.Wait(); err != nil {
		t.Fatalf("unpacking the tree in the container: %v: %s", err, stderr.String())
	}
}

func docker(ctx context.Context, t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.CommandContext(ctx, "docker", args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return out
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

func uniq(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
