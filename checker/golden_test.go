package checker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// goldenVerdicts gives, for every history in testdata/, the verdict of each
// checker. A file's -ok or -bad suffix is the verdict of the checker it is
// about; fenced-rejected-ok, for one, is Kleppmann's fenced case: the mutex
// checker sees the stale holder, but the fence stopped its write.
var goldenVerdicts = map[string]map[string]Validity{
	"handoff-ok":         {NameMutex: Valid, NameLinearizable: Valid, NameFencing: Valid, NameLostUpdate: Valid},
	"stale-holder-bad":   {NameMutex: Invalid, NameLinearizable: Invalid, NameFencing: Valid, NameLostUpdate: Invalid},
	"double-grant-bad":   {NameMutex: Invalid, NameLinearizable: Invalid, NameFencing: Valid, NameLostUpdate: Valid},
	"zero-overlap-ok":    {NameMutex: Valid, NameLinearizable: Valid, NameFencing: Valid, NameLostUpdate: Valid},
	"fenced-rejected-ok": {NameMutex: Invalid, NameLinearizable: Invalid, NameFencing: Valid, NameLostUpdate: Valid},
	"fenced-stale-bad":   {NameMutex: Invalid, NameLinearizable: Invalid, NameFencing: Invalid, NameLostUpdate: Invalid},
	"lost-update-bad":    {NameMutex: Valid, NameLinearizable: Valid, NameFencing: Valid, NameLostUpdate: Invalid},
	"increments-ok":      {NameMutex: Valid, NameLinearizable: Valid, NameFencing: Valid, NameLostUpdate: Valid},
}

// goldenDetails checks what each bad (or surprising) golden history must show.
var goldenDetails = map[string]func(t *testing.T, c *Checkers){
	"stale-holder-bad": func(t *testing.T, c *Checkers) {
		if c.Mutex.StaleHolders != 1 || c.Mutex.DoubleGrants != 0 {
			t.Errorf("mutex: %+v", c.Mutex)
		}
		want := "process 0 held k0 until 2.61s, but process 1 acquired k0 at 1.30s: 240µs of overlap — stale holder, its 1s lease had run out at 1.00s"
		if got := c.Mutex.Violations[0].Description; got != want {
			t.Errorf("description %q, want %q", got, want)
		}
		if c.LostUpdate.Count != 2 { // a duplicate 1, and so a final read of 1 after 2 writes
			t.Errorf("lost updates: %+v", c.LostUpdate)
		}
		if c.Fencing.UnfencedWrites != 2 {
			t.Errorf("fencing: %+v", c.Fencing)
		}
	},
	"double-grant-bad": func(t *testing.T, c *Checkers) {
		if c.Mutex.DoubleGrants != 1 || c.Mutex.StaleHolders != 0 {
			t.Errorf("mutex: %+v", c.Mutex)
		}
	},
	"fenced-rejected-ok": func(t *testing.T, c *Checkers) {
		if c.Fencing.RejectedStale != 1 || c.Fencing.FencedWrites != 1 || c.Mutex.StaleHolders != 1 {
			t.Errorf("fencing %+v, mutex %+v", c.Fencing, c.Mutex)
		}
	},
	"fenced-stale-bad": func(t *testing.T, c *Checkers) {
		if c.Fencing.Count != 1 || c.Fencing.Violations[0].Fence != 33 || c.Fencing.Violations[0].Highest != 34 {
			t.Errorf("fencing %+v", c.Fencing)
		}
	},
	"lost-update-bad": func(t *testing.T, c *Checkers) {
		if c.LostUpdate.Count != 3 || c.LostUpdate.Violations[0].Kind != duplicateWrite || c.LostUpdate.Violations[2].Kind != lowFinalRead {
			t.Errorf("lost updates %+v", c.LostUpdate)
		}
	},
}

func readGolden(t testing.TB) map[string][]history.Op {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden histories: %v", err)
	}
	out := map[string][]history.Op{}
	for _, f := range files {
		ops, err := history.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := history.Validate(context.Background(), ops); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".jsonl")] = ops
	}
	return out
}

func TestGolden(t *testing.T) {
	golden := readGolden(t)
	for name, ops := range golden {
		t.Run(name, func(t *testing.T) {
			want, ok := goldenVerdicts[name]
			if !ok {
				t.Fatalf("testdata/%s.jsonl has no expected verdicts", name)
			}
			c, err := Check(context.Background(), ops, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := c.Verdicts()
			for n, v := range want {
				if got[n] != v {
					t.Errorf("%s: %v, want %v", n, got[n], v)
				}
			}
			if c.Mutex.Valid != c.Linearizable.Valid {
				t.Errorf("mutex says %v but linearizable says %v", c.Mutex.Valid, c.Linearizable.Valid)
			}
			if c.Stats.Valid != Valid || c.Stats.Clients == 0 {
				t.Errorf("stats %+v", c.Stats)
			}
			if d := goldenDetails[name]; d != nil {
				d(t, &c)
			}
		})
	}
	for name := range goldenVerdicts {
		if golden[name] == nil {
			t.Errorf("testdata/%s.jsonl is missing", name)
		}
	}
	var ok, bad int
	for name := range golden {
		switch {
		case strings.HasSuffix(name, "-ok"):
			ok++
		case strings.HasSuffix(name, "-bad"):
			bad++
		default:
			t.Errorf("%s: golden histories end in -ok or -bad", name)
		}
	}
	if ok == 0 || bad == 0 {
		t.Errorf("%d -ok and %d -bad histories", ok, bad)
	}
}

// TestGoldenFilesAreJSONL guards against editors adding blank or CRLF lines.
func TestGoldenFilesAreJSONL(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\r") || strings.Contains(string(b), "\n\n") || !strings.HasSuffix(string(b), "}\n") {
			t.Errorf("%s is not clean JSONL", f)
		}
	}
}
