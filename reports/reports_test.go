package reports

import (
	"bytes"
	"context"
	"encoding/xml"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// hb builds a history in time order.
type hb struct{ ops []history.Op }

func (h *hb) add(ms float64, p int, typ history.Type, f, key string, mod ...func(*history.Op)) {
	op := history.Op{Index: int64(len(h.ops)), Time: int64(ms * 1e6), Process: p, Type: typ, F: f, Key: key}
	for _, m := range mod {
		m(&op)
	}
	h.ops = append(h.ops, op)
}

func fence(n int64) func(*history.Op) { return func(o *history.Op) { o.Fence = history.Int64(n) } }
func lease(ms int64) func(*history.Op) {
	return func(o *history.Op) { o.LeaseMS = history.Int64(ms) }
}
func val(v int64) func(*history.Op)     { return func(o *history.Op) { o.Value = history.IntValue(v) } }
func obj(v any) func(*history.Op)       { return func(o *history.Op) { o.Value = history.ObjectValue(v) } }
func errMsg(s string) func(*history.Op) { return func(o *history.Op) { o.Error = s } }

// kleppmann is Kleppmann's fenced scenario: p0 acquires (fence 33), pauses
// 2.5s past its 1s lease; p1 acquires (fence 34) and writes; p0 wakes and
// writes with fence 33, which the resource rejects.
func kleppmann() []history.Op {
	var h hb
	I, O, F, N := history.Invoke, history.OK, history.Fail, history.Info
	h.add(1, 0, I, "acquire", "k0")
	h.add(50, 0, O, "acquire", "k0", fence(33), lease(1000))
	h.add(55, 0, I, "read", "k0", fence(33))
	h.add(58, 0, O, "read", "k0", fence(33), val(0))
	h.add(70, -1, N, "start-pause", "", obj(map[string]int{"process": 0, "ms": 2500}))
	h.add(200, 1, I, "acquire", "k0")
	h.add(210, 1, F, "acquire", "k0", errMsg("lock busy"))
	h.add(600, 1, I, "acquire", "k0")
	h.add(612, 1, F, "acquire", "k0", errMsg("lock busy"))
	h.add(1100, 1, I, "acquire", "k0")
	h.add(1130, 1, O, "acquire", "k0", fence(34), lease(1000))
	h.add(1150, 1, I, "read", "k0", fence(34))
	h.add(1153, 1, O, "read", "k0", fence(34), val(0))
	h.add(1300, 1, I, "write", "k0", fence(34), val(1))
	h.add(1304, 1, O, "write", "k0", fence(34), val(1))
	h.add(1500, 1, I, "release", "k0")
	h.add(1510, 1, O, "release", "k0")
	h.add(2570, -1, N, "stop-pause", "", obj(map[string]int{"process": 0, "ms": 2500}))
	h.add(2600, 0, I, "write", "k0", fence(33), val(1))
	h.add(2606, 0, F, "write", "k0", fence(33), val(1), errMsg("stale fence 33 < 34"))
	h.add(2700, 0, I, "release", "k0")
	h.add(2705, 0, F, "release", "k0", errMsg("not the owner"))
	h.add(3000, 1, I, "acquire", "k0")
	h.add(3020, 1, O, "acquire", "k0", fence(35), lease(1000))
	h.add(3030, 1, I, "read", "k0", fence(35))
	h.add(3033, 1, O, "read", "k0", fence(35), val(1))
	h.add(3100, 1, I, "write", "k0", fence(35), val(2))
	h.add(3104, 1, O, "write", "k0", fence(35), val(2))
	h.add(3400, 1, I, "release", "k0")
	h.add(3410, 1, O, "release", "k0")
	h.add(3600, 0, I, "final-read", "k0")
	h.add(3602, 0, O, "final-read", "k0", val(2))
	return h.ops
}

func check(t testing.TB, ops []history.Op, scenario, backend string) *checker.Results {
	t.Helper()
	c, err := checker.Check(context.Background(), ops, nil, checker.Options{LinearizableTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &checker.Results{Valid: c.Verdict(), Checkers: c, Scenario: scenario, Backend: backend, Resource: "memory", Seed: 1, Ops: len(ops)}
}

func kleppmannInfo() RunInfo {
	return RunInfo{
		Scenario: "kleppmann-fenced", Description: "p0 pauses past its lease; p1 takes the lock; p0's stale write is rejected by the fence",
		Backend: "redis-fenced", Resource: "memory", Fencing: "all", Seed: 1, Clients: 2, Keys: 1,
		Command:  "locktorture run --scenario kleppmann-fenced --seed 1",
		Expected: "invalid",
		Settings: map[string]string{"ttl": "1s", "clients": "2", "nemesis": "pause"},
		Logs:     []string{"redis-0.log", "redis sentinel.log"},
	}
}

func TestWriteRun(t *testing.T) {
	ops := kleppmann()
	res := check(t, ops, "kleppmann-fenced", "redis-fenced")
	if res.Checkers.Mutex.Valid != checker.Invalid || len(res.Checkers.Mutex.Violations) != 1 {
		t.Fatalf("synthetic history should have one overlap: %+v", res.Checkers.Mutex)
	}
	if res.Checkers.Fencing.RejectedStale != 1 {
		t.Fatalf("synthetic history should have one rejection: %+v", res.Checkers.Fencing)
	}
	dir := t.TempDir()
	info := kleppmannInfo()
	info.Summary = Summary(res, 20)
	if err := WriteRun(context.Background(), dir, ops, res, info); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{FileTimeline, FileLatency, FileRate, FileLinearizability, FileJUnit, FileIndex} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	for _, name := range []string{FileTimeline, FileLatency, FileRate} {
		checkPNG(t, filepath.Join(dir, name))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}

	idx := read(t, filepath.Join(dir, FileIndex))
	want := []string{`src="timeline.png"`, `src="latency.png"`, `src="rate.png"`}
	for _, l := range []string{FileHistory, FileResults, FileScenario, FileRunLog, FileLinearizability, FileJUnit, "redis-0.log", "redis%20sentinel.log"} {
		want = append(want, `href="`+l+`"`)
	}
	want = append(want, "kleppmann-fenced", "INVALID", "expected invalid", "as expected", info.Command, "ttl",
		res.Checkers.Mutex.Violations[0].Description[:40], "rejected: ")
	for _, w := range want {
		if !strings.Contains(idx, htmlUnescape(w)) && !strings.Contains(idx, w) {
			t.Errorf("index.html lacks %q", w)
		}
	}
	if strings.Contains(idx, "http://") || strings.Contains(idx, "https://") || strings.Contains(idx, "<script") {
		t.Error("index.html must open from disk: no network, no scripts")
	}

	lin := read(t, filepath.Join(dir, FileLinearizability))
	if !strings.Contains(lin, "pause") {
		t.Error("linearizability.html should list the pause window at the top")
	}

	checkJUnit(t, filepath.Join(dir, FileJUnit), res)
}

// htmlUnescape undoes html/template's escaping of the few characters the
// expected strings contain.
func htmlUnescape(s string) string {
	return strings.NewReplacer("&#39;", "'", "&amp;", "&").Replace(s)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() < 600 || b.Dx() > 2000 || b.Dy() < 200 || b.Dy() > 2000 {
		t.Errorf("%s: odd size %dx%d", path, b.Dx(), b.Dy())
	}
}

func checkJUnit(t *testing.T, path string, res *checker.Results) {
	t.Helper()
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Error *struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(read(t, path)), &doc); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("want one testsuite, got %d", len(doc.Suites))
	}
	verdicts := res.Checkers.Verdicts()
	s := doc.Suites[0]
	if len(s.Cases) != len(verdicts) || s.Tests != len(verdicts) {
		t.Fatalf("want %d testcases, got %d (tests=%d)", len(verdicts), len(s.Cases), s.Tests)
	}
	for _, c := range s.Cases {
		v, ok := verdicts[c.Name]
		if !ok {
			t.Errorf("testcase %q is not a checker that ran", c.Name)
			continue
		}
		if (v == checker.Invalid) != (c.Failure != nil) {
			t.Errorf("testcase %s: verdict %v but failure=%v", c.Name, v, c.Failure != nil)
		}
		if (v == checker.Unknown) != (c.Error != nil) {
			t.Errorf("testcase %s: verdict %v but error=%v", c.Name, v, c.Error != nil)
		}
		if c.Name == checker.NameMutex && v == checker.Invalid && (c.Failure == nil || !strings.Contains(c.Failure.Text, res.Checkers.Mutex.Violations[0].Description)) {
			t.Errorf("mutex failure should carry the overlap's description")
		}
	}
}

func TestSummary(t *testing.T) {
	ops := kleppmann()
	res := check(t, ops, "kleppmann-fenced", "redis-fenced")
	res.Note = "a note"
	s := Summary(res, 5)
	lines := strings.Split(s, "\n")
	if !strings.HasPrefix(lines[0], "INVALID — kleppmann-fenced / redis-fenced (seed 1") {
		t.Errorf("first line: %q", lines[0])
	}
	for _, w := range []string{
		"  mutex         invalid  1 overlap in 3 holds (1 stale holder, 0 double grants)",
		"  fencing       valid    ",
		"1 stale write rejected",
		"  lost-update   ",
		"  linearizable  ",
		"  stats         valid    ",
		res.Checkers.Mutex.Violations[0].Description,
		"rejected: " + res.Checkers.Fencing.Rejections[0].Description,
		"note: a note",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("summary lacks %q:\n%s", w, s)
		}
	}
	if strings.Contains(Summary(res, 0), res.Checkers.Mutex.Violations[0].Description) {
		t.Error("maxViolations 0 should list no violations")
	}
	// The cap applies per checker, and what is left over is counted.
	res.Checkers.Mutex.Violations = append(res.Checkers.Mutex.Violations, res.Checkers.Mutex.Violations[0], res.Checkers.Mutex.Violations[0])
	res.Checkers.Mutex.Count = 3
	if s := Summary(res, 1); strings.Count(s, res.Checkers.Mutex.Violations[0].Description) != 1 || !strings.Contains(s, "and 2 more") {
		t.Errorf("cap of 1 not applied:\n%s", s)
	}
}

func TestResultsRoundTrip(t *testing.T) {
	res := check(t, kleppmann(), "kleppmann-fenced", "redis-fenced")
	path := filepath.Join(t.TempDir(), FileResults)
	if err := WriteResults(path, res); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Valid != res.Valid || got.Checkers.Mutex.Count != 1 || got.Checkers.Mutex.Violations[0].Description != res.Checkers.Mutex.Violations[0].Description {
		t.Errorf("round trip changed results: %+v", got)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte("\n  \"checkers\": {")) || !bytes.Contains(b, []byte(`"valid": false`)) {
		t.Errorf("results.json not indented or not per contract:\n%s", b)
	}
	if _, err := ReadResults(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("reading a missing file should fail")
	}
}

func TestFaults(t *testing.T) {
	var h hb
	N := history.Info
	h.add(10, -1, N, "start-pause", "", obj(map[string]int{"process": 1, "ms": 100}))
	h.add(20, -1, N, "start-pause", "", obj(map[string]int{"process": 0, "ms": 100}))
	h.add(30, -1, N, "stop-pause", "", obj(map[string]int{"process": 0, "ms": 100}))
	h.add(40, -1, N, "failover", "", obj(map[string]string{"server": "redis-1"}))
	h.add(50, -1, N, "start-partition", "", obj(map[string]string{"isolate": "client 0"}))
	h.add(60, -1, N, "stop-pause", "", obj(map[string]int{"process": 1, "ms": 100}))
	h.add(90, 0, history.Invoke, "acquire", "k0")
	fs := faults(h.ops)
	if len(fs) != 4 {
		t.Fatalf("want 4 faults, got %+v", fs)
	}
	ms := func(n int64) int64 { return n * 1e6 }
	want := []struct {
		kind       string
		start, end int64
		instant    bool
		open       bool
		procs      []int
	}{
		{"pause", ms(10), ms(60), false, false, []int{1}},
		{"pause", ms(20), ms(30), false, false, []int{0}},
		{"failover", ms(40), ms(40), true, false, nil},
		{"partition", ms(50), ms(90), false, true, nil},
	}
	for i, w := range want {
		f := fs[i]
		if f.Kind != w.kind || f.Start != w.start || f.End != w.end || f.Instant != w.instant || f.Open != w.open || !sameInts(f.Processes, w.procs) {
			t.Errorf("fault %d: got %+v, want %+v", i, f, w)
		}
	}
}

// bigHistory generates a long history: 8 clients taking 4 keys in turn,
// with fenced writes, periodic partitions, pauses and kills, and a few
// deliberate overlaps.
func bigHistory(n int) []history.Op {
	rng := rand.New(rand.NewPCG(1, 2))
	var h hb
	owner := map[string]int{}
	fences := map[string]int64{}
	values := map[string]int64{}
	t := 0.0
	keys := []string{"k0", "k1", "k2", "k3"}
	held := map[int]string{}
	I, O, F := history.Invoke, history.OK, history.Fail
	for step := 0; len(h.ops) < n; step++ {
		t += rng.Float64() * 0.5
		switch r := step % 2000; {
		case r == 0:
			h.add(t, -1, history.Info, "start-partition", "", obj(map[string]string{"isolate": "client 3"}))
			continue
		case r == 400:
			h.add(t, -1, history.Info, "stop-partition", "", obj(map[string]string{"isolate": "client 3"}))
			continue
		case r == 800:
			h.add(t, -1, history.Info, "start-pause", "", obj(map[string]int{"process": 2, "ms": 300}))
			continue
		case r == 1000:
			h.add(t, -1, history.Info, "stop-pause", "", obj(map[string]int{"process": 2, "ms": 300}))
			continue
		case r == 1500:
			h.add(t, -1, history.Info, "kill", "", obj(map[string]string{"server": "redis-0"}))
			continue
		}
		p := rng.IntN(8)
		if k, ok := held[p]; ok {
			v := values[k] + 1
			h.add(t, p, I, "write", k, fence(fences[k]), val(v))
			t += rng.Float64() * 0.3
			h.add(t, p, O, "write", k, fence(fences[k]), val(v))
			values[k] = v
			t += rng.Float64() * 0.3
			h.add(t, p, I, "release", k)
			t += rng.Float64() * 0.3
			h.add(t, p, O, "release", k)
			delete(held, p)
			if owner[k] == p {
				delete(owner, k)
			}
			continue
		}
		k := keys[rng.IntN(len(keys))]
		h.add(t, p, I, "acquire", k)
		t += rng.Float64() * 2
		_, busy := owner[k]
		if busy && rng.IntN(2000) != 0 { // now and then, a double grant
			if rng.IntN(50) == 0 {
				h.add(t, p, history.Info, "acquire", k, errMsg("timeout"))
			} else {
				h.add(t, p, F, "acquire", k, errMsg("lock busy"))
			}
			continue
		}
		fences[k]++
		owner[k] = p
		held[p] = k
		h.add(t, p, O, "acquire", k, fence(fences[k]), lease(1000))
	}
	return h.ops
}

func TestWriteRunBig(t *testing.T) {
	if testing.Short() {
		t.Skip("large history")
	}
	ops := bigHistory(200000)
	c, err := checker.Check(context.Background(), ops, []string{checker.NameMutex, checker.NameFencing, checker.NameLostUpdate, checker.NameStats}, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := &checker.Results{Valid: c.Verdict(), Checkers: c, Scenario: "big", Backend: "synthetic", Seed: 7, Ops: len(ops)}
	dir := t.TempDir()
	if err := WriteRun(context.Background(), dir, ops, res, RunInfo{Clients: 8, Keys: 4}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{FileTimeline, FileLatency, FileRate} {
		checkPNG(t, filepath.Join(dir, name))
	}
	if lin := read(t, filepath.Join(dir, FileLinearizability)); !strings.Contains(lin, "not drawn") {
		t.Error("a huge history should get the short linearizability page")
	}
	if s := os.Getenv("REPORTS_SAMPLE_DIR"); s != "" {
		for _, name := range []string{FileTimeline, FileLatency, FileRate} {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			os.WriteFile(filepath.Join(s, "big-"+name), b, 0o644)
		}
	}
}

// TestSampleReport draws the Kleppmann report whole — every file, the
// timeline a real PNG. With $REPORTS_SAMPLE_DIR set it writes there, to
// look at; otherwise to a temporary directory.
func TestSampleReport(t *testing.T) {
	dir := os.Getenv("REPORTS_SAMPLE_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	ops := kleppmann()
	res := check(t, ops, "kleppmann-fenced", "redis-fenced")
	info := kleppmannInfo()
	info.Summary = Summary(res, 20)
	if err := WriteRun(context.Background(), dir, ops, res, info); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{FileTimeline, FileLatency, FileRate} {
		checkPNG(t, filepath.Join(dir, name))
	}
	for _, name := range []string{FileIndex, FileJUnit, FileLinearizability, FileRunInfo} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", name, err)
		}
	}
}

func BenchmarkTimeline200k(b *testing.B) {
	ops := bigHistory(200000)
	c, _ := checker.Check(context.Background(), ops, []string{checker.NameMutex, checker.NameFencing}, checker.Options{})
	res := &checker.Results{Checkers: c}
	for b.Loop() {
		if _, err := timelinePNG(ops, res, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGoldenHistories reports every golden history of the checker package:
// stale writes accepted, lost updates, double grants all render.
func TestGoldenHistories(t *testing.T) {
	paths, _ := filepath.Glob("../checker/testdata/*.jsonl")
	if len(paths) == 0 {
		t.Fatal("no golden histories in ../checker/testdata")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ops, err := history.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res := check(t, ops, strings.TrimSuffix(filepath.Base(path), ".jsonl"), "golden")
			dir := t.TempDir()
			if err := WriteRun(context.Background(), dir, ops, res, RunInfo{}); err != nil {
				t.Fatal(err)
			}
			checkPNG(t, filepath.Join(dir, FileTimeline))
			checkJUnit(t, filepath.Join(dir, FileJUnit), res)
			s := Summary(res, 3)
			if res.Valid == checker.Invalid && !strings.Contains(s, "violations:") {
				t.Errorf("an invalid run's summary should list violations:\n%s", s)
			}
			if sd := os.Getenv("REPORTS_SAMPLE_DIR"); sd != "" {
				b, _ := os.ReadFile(filepath.Join(dir, FileTimeline))
				os.WriteFile(filepath.Join(sd, "golden-"+filepath.Base(path)+".png"), b, 0o644)
			}
		})
	}
}

func TestEmptyAndUnknown(t *testing.T) {
	// No ops and no checker: still a complete report, verdict unknown.
	res := &checker.Results{Valid: checker.Unknown, Note: "nothing was checked"}
	dir := t.TempDir()
	if err := WriteRun(context.Background(), dir, nil, res, RunInfo{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{FileTimeline, FileLatency, FileRate} {
		checkPNG(t, filepath.Join(dir, name))
	}
	if idx := read(t, filepath.Join(dir, FileIndex)); !strings.Contains(idx, "UNKNOWN") || !strings.Contains(idx, "nothing was checked") {
		t.Error("index.html should show the unknown verdict and the note")
	}
	if s := Summary(res, 5); !strings.HasPrefix(s, "UNKNOWN") || !strings.Contains(s, "no checker ran") {
		t.Errorf("summary: %q", s)
	}

	// An undecided linearizable checker is a JUnit error, not a pass.
	res = &checker.Results{Valid: checker.Unknown, Checkers: checker.Checkers{
		Linearizable: &checker.LinearizableResult{Valid: checker.Unknown, Keys: 1, UnknownKeys: []string{"k0"}, TimeoutMS: 100},
		Mutex:        &checker.MutexResult{Valid: checker.Valid, Holds: 3},
	}}
	dir = t.TempDir()
	if err := WriteRun(context.Background(), dir, kleppmann(), res, RunInfo{}); err != nil {
		t.Fatal(err)
	}
	checkJUnit(t, filepath.Join(dir, FileJUnit), res)

	// A cancelled context stops the report with an error naming the file.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WriteRun(ctx, t.TempDir(), kleppmann(), res, RunInfo{}); err == nil || !strings.Contains(err.Error(), FileTimeline) {
		t.Errorf("cancelled WriteRun: %v", err)
	}
}

// TestHeadlineNamesTheProgram: a run of backend exec names the program
// that ran on the summary's first line.
func TestHeadlineNamesTheProgram(t *testing.T) {
	res := &checker.Results{Valid: checker.Valid, Scenario: "baseline", Backend: "exec", Program: "my_kazoo_lock.py", Seed: 1, Ops: 10}
	if h := Headline(res); !strings.HasPrefix(h, "VALID — baseline / exec: my_kazoo_lock.py (seed 1") {
		t.Errorf("headline %q: want it to name exec: my_kazoo_lock.py", h)
	}
}
