package libversion

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBuildOtherVersion builds the command with go-zookeeper/zk at the
// release before this program's and checks that the binary reports that
// version on its zk-lock findings' lines (read from its build information,
// as a library row's version is). It needs the module proxy: skipped
// under -short, and when the proxy cannot be reached.
func TestBuildOtherVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command against another module version (the module proxy, ~1 min): not with -short")
	}
	const module = "github.com/go-zookeeper/zk"
	ctx := context.Background()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	src, err := FindSource("", wd)
	if err != nil {
		t.Fatal(err)
	}
	b := &Builder{Source: src, Cache: t.TempDir()}
	ours, err := b.Ours(ctx, module)
	if err != nil {
		t.Fatal(err)
	}
	all, err := List(ctx, module)
	if err != nil {
		t.Skipf("the module proxy cannot be reached: %v", err)
	}
	var prev string
	for _, v := range all {
		if Compare(v, ours) < 0 && prerelease(v) == "" {
			prev = v
		}
	}
	if prev == "" {
		t.Skipf("the proxy serves no release of %s before %s (%v)", module, ours, all)
	}
	bin, err := b.Build(ctx, module, prev)
	if err != nil {
		if strings.Contains(err.Error(), "dial tcp") || strings.Contains(err.Error(), "proxy") {
			t.Skipf("the module proxy cannot be reached: %v", err)
		}
		t.Fatalf("build at %s: %v", prev, err)
	}
	out, err := exec.Command(bin, "list", "findings").Output()
	if err != nil {
		t.Fatalf("%s list findings: %v", bin, err)
	}
	var lines int
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, "go-zookeeper zk.Lock") {
			continue
		}
		lines++
		if !strings.Contains(line, "zk.Lock "+prev+"\t") && !strings.Contains(line, "zk.Lock "+prev+" ") {
			t.Errorf("built at %s, list findings says: %s", prev, line)
		}
	}
	if lines == 0 {
		t.Fatalf("no zk-lock finding in list findings:\n%s", out)
	}
	// A second build of the same version, nothing changed, is the cached
	// binary.
	again, err := b.Build(ctx, module, prev)
	if err != nil || again != bin {
		t.Errorf("rebuild = %q, %v; want the cached %q", again, err, bin)
	}
}

// TestWithEnds: a range's end the module proxy serves by name is taken
// even when the proxy's list leaves it out (rueidis v1.0.70, here); one it
// does not serve is not. Needs the proxy: skipped under -short and when it
// cannot be reached.
func TestWithEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("asks the module proxy: not with -short")
	}
	const module = "github.com/redis/rueidis"
	ctx := context.Background()
	all, err := List(ctx, module)
	if err != nil {
		t.Skipf("the module proxy cannot be reached: %v", err)
	}
	got := WithEnds(ctx, module, all, Range{From: "v1.0.70", To: "v9.9.9"})
	if !slices.Contains(got, "v1.0.70") {
		t.Errorf("v1.0.70 (served by name) not taken: %v", got)
	}
	if slices.Contains(got, "v9.9.9") {
		t.Errorf("v9.9.9 (not served) taken: %v", got)
	}
	if _, err := Select(got, Range{From: "v1.0.70", To: "v1.0.70"}, "v1.0.79"); err != nil {
		t.Errorf("Select of the taken end: %v", err)
	}
}
