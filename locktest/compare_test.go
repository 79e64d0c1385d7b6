package locktest_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/locktest"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/reports"
)

// delLock is the package doc's token lock released with a plain DEL: the
// paused client, waking, deletes the next holder's lock.
type delLock struct{ *tokenLock }

func newDelLock(ctx context.Context, cfg locktest.Config) (locktest.Lock, error) {
	l, err := newTokenLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return delLock{l.(*tokenLock)}, nil
}

func (l delLock) Release(ctx context.Context, key string) error {
	n, err := l.rdb.Del(ctx, key).Result()
	if err == nil && n == 0 {
		err = locktest.ErrNotHeld
	}
	return err
}

// TestCompareTokenLock puts the token lock, claiming a stale holder
// possible, in compare's table beside redis-token and redis-naive under
// pause and clock, one seed: its row and theirs are in compare.txt,
// compare.html, results.json (as its contract says, the row's cells judged
// against the claim, no library) and junit.xml, compare.png is a picture;
// its pause cell is a stale holder, as claimed, and clock is not run for
// it (a client process's clock is its own), with the reason.
func TestCompareTokenLock(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
	// The client processes run this test too (the store's t.TempDir
	// included) and must leave nothing of it: their temporary
	// directories go under tmp (this test's own are made beside it).
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	res := locktest.Compare(t, locktest.Comparison{New: newTokenLock, Name: "token", Claim: new(locktest.StaleHolderPossible),
		Families: []string{"pause", "clock"}, Beside: []string{"redis-token", "redis-naive"}, Store: t.TempDir()})
	if res.Dir == "" {
		t.Fatal("no comparison directory")
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("the client processes left %d temporary directories in TMPDIR (%v): %v", len(left), err, names)
	}
	txt, err := os.ReadFile(filepath.Join(res.Dir, "compare.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"token", "redis-token", "redis-naive"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(row) + ` `).Match(txt) {
			t.Errorf("compare.txt has no row %s:\n%s", row, txt)
		}
	}
	if !regexp.MustCompile(`(?m)^token +\S+ +\S+ +\S+ +UNSAFE .* not run +2/2$`).Match(txt) {
		t.Errorf("compare.txt: token's row is not an unsafe pause, clock not run, 2 of 2 as claimed:\n%s", txt)
	}

	// results.json, read as JSON (the contract's names) and as a matrix.
	b, err := os.ReadFile(filepath.Join(res.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Kind     string   `json:"kind"`
		Compare  bool     `json:"compare"`
		Backends []string `json:"backends"`
		Cells    []struct {
			Scenario   string          `json:"scenario"`
			Backend    string          `json:"backend"`
			Seed       int64           `json:"seed"`
			Verdict    string          `json:"verdict"`
			Expected   string          `json:"expected"`
			AsExpected bool            `json:"as_expected"`
			Library    json.RawMessage `json:"library"`
		} `json:"cells"`
		Skipped []matrix.Skipped `json:"skipped"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if doc.Kind != matrix.Kind || !doc.Compare || strings.Join(doc.Backends, ",") != "redis-token,redis-naive,token" {
		t.Errorf("results.json: kind %q, compare %v, backends %v", doc.Kind, doc.Compare, doc.Backends)
	}
	verdicts := map[string]string{}
	for _, c := range doc.Cells {
		if c.Backend != "token" {
			continue
		}
		verdicts[c.Scenario] = c.Verdict
		if !c.AsExpected || c.Expected == matrix.NoClaim || c.Library != nil || c.Seed != 1 {
			t.Errorf("results.json: %s / token: expected %q, as expected %v, library %s, seed %d", c.Scenario, c.Expected, c.AsExpected, c.Library, c.Seed)
		}
	}
	if verdicts["baseline"] != "valid" || verdicts["pause"] != "invalid" || len(verdicts) != 2 {
		t.Errorf("results.json: token's verdicts %v, want baseline valid and pause invalid only", verdicts)
	}
	clock := false
	for _, s := range doc.Skipped {
		clock = clock || s.Scenario == "clock" && s.Backend == "token" && strings.Contains(s.Why, "clock")
	}
	if !clock {
		t.Errorf("results.json does not say why clock / token was not run: %+v", doc.Skipped)
	}
	if m, err := matrix.Read(res.Dir); err != nil || len(m.Cells) != len(res.Matrix.Cells) {
		t.Errorf("matrix.Read: %v (%d cells, Compare returned %d)", err, len(m.Cells), len(res.Matrix.Cells))
	}

	html, err := os.ReadFile(filepath.Join(res.Dir, reports.FileCompareHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"token", "redis-token", "redis-naive"} {
		if !strings.Contains(string(html), ">"+row+"<") {
			t.Errorf("compare.html does not name the row %s", row)
		}
	}
	f, err := os.Open(filepath.Join(res.Dir, reports.FileComparePNG))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() < 100 {
		t.Errorf("compare.png: %v", err)
	}
	junit, err := os.ReadFile(filepath.Join(res.Dir, reports.FileJUnit))
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Cases []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(junit, &suites); err != nil || !strings.Contains(string(junit), "token") || len(suites.Cases) == 0 {
		t.Errorf("junit.xml: %v, %d cases, names token: %v", err, len(suites.Cases), strings.Contains(string(junit), "token"))
	}
}

// TestCompareClaims runs two comparisons of the plain-DEL lock under
// pause, alone, in a test binary of its own: claiming safe, its pause cell
// fails, saying which way and where the report is (kept, the test having
// failed); with no claim, the same cell passes. Baselines pass both times.
func TestCompareClaims(t *testing.T) {
	if os.Getenv("LOCKTEST_COMPAREDEMO") != "" {
		locktest.Compare(t, locktest.Comparison{New: newDelLock, Name: "del-safe", Claim: new(locktest.Safe),
			Families: []string{"pause"}, Beside: []string{}})
		locktest.Compare(t, locktest.Comparison{New: newDelLock, Name: "del-noclaim", Families: []string{"pause"}, Beside: []string{}})
		return
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCompareClaims$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKTEST_COMPAREDEMO=1", locktest.EnvStore+"=", locktest.EnvKeep+"=")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the comparisons' test binary: %v, want exit 1\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"--- FAIL: TestCompareClaims/pause/seed-1",
		`pause / del-safe (seed 1): less safe than the claim "safe"`,
		"--- PASS: TestCompareClaims/baseline/seed-1",
		"--- PASS: TestCompareClaims/pause/seed-1#01",
		"repeat with: go test -run '^TestCompareClaims$'",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the output does not say %q:\n%s", want, text)
		}
	}
	htmls := regexp.MustCompile(`compare\.html: (\S+)`).FindAllStringSubmatch(text, -1)
	if len(htmls) != 2 {
		t.Fatalf("the output names %d compare.html, want 2:\n%s", len(htmls), text)
	}
	for _, h := range htmls {
		store := filepath.Dir(filepath.Dir(filepath.Dir(h[1])))
		t.Cleanup(func() { _ = os.RemoveAll(store) })
		if _, err := os.Stat(h[1]); err != nil || !strings.HasPrefix(filepath.Base(store), "locktest-compare-") {
			t.Errorf("%s: %v, want it kept in a temporary store, the test having failed", h[1], err)
		}
	}
	m, err := matrix.Read(filepath.Dir(htmls[1][1]))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Cells {
		if c.Expected != matrix.NoClaim || !c.AsExpected {
			t.Errorf("del-noclaim: %s: expected %q, as expected %v; want no claim", c.CellKey, c.Expected, c.AsExpected)
		}
		if c.Scenario == "pause" && (c.Verdict != "invalid" || c.Safety == nil || c.Safety.LostUpdates == 0) {
			t.Errorf("del-noclaim: pause: %s, %+v; want invalid with lost updates", c.Verdict, c.Safety)
		}
	}
}

// TestCompareSkipsWithoutServers runs TestCompareClaims's comparisons where
// no server program is on PATH: the test skips, saying what to install.
func TestCompareSkipsWithoutServers(t *testing.T) {
	if os.Getenv(locktest.EnvServers) != "" {
		t.Skip("servers are not local here")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCompareClaims$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir(), "LOCKTEST_COMPAREDEMO=1", locktest.EnvStore+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"--- SKIP: TestCompareClaims", "cannot run servers here: server program not found: redis-server is not on PATH; install the Debian package redis-server (or run them in containers: LOCKTEST_SERVERS=docker)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
}
