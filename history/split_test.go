package history

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// splitInputs are histories to split: the repository's, and ones with
// blank lines, bad lines and cut-off last lines in either half.
func splitInputs(t testing.TB) map[string][]byte {
	in := map[string][]byte{}
	for _, f := range testdataFiles(t) {
		in[f] = must(os.ReadFile(f))
	}
	good := string(must(os.ReadFile("testdata/design-example.jsonl")))
	lines := strings.SplitAfter(good, "\n")
	lines = lines[:len(lines)-1] // after the last newline
	half := len(lines) / 2
	first, second := strings.Join(lines[:half], ""), strings.Join(lines[half:], "")
	bad := `{"index":9,"time":1,"process":0,"type":"done","f":"acquire","key":"k0"}` + "\n"
	in["blank lines first"] = []byte("\n  \n" + first + "\n\r\n" + second)
	in["blank lines second"] = []byte(first + "\n\n \n" + second + "\n\n")
	in["bad first"] = []byte(bad + first + second)
	in["bad second"] = []byte(first + second + bad)
	in["bad both"] = []byte(first + bad + second + bad)
	in["not json second"] = []byte(first + second + "{\n")
	in["cut"] = []byte(first + second + `{"index":5,"ti`)
	in["cut after blank"] = []byte("\n\n\n" + first + second + `{"index":5,"ti`)
	in["only blank"] = []byte("\n\n\n\n")
	in["no newline"] = []byte(strings.TrimSpace(lines[0]))
	in["long line"] = []byte(first + `{"index":1,"time":2,"process":3,"type":"ok","f":"x","value":[` + strings.Repeat(`"abcdefgh",`, 40000) + "1]}\n" + second)
	for _, line := range oddLines {
		in["odd "+line] = []byte(first + line + "\n" + second)
	}
	return in
}

// checkSplit holds readSplit, cut at mid, to readAll on data (want and
// werr, or read here when want is nil).
func checkSplit(t *testing.T, name string, data []byte, mid int64, contract bool, want []Op, werr error) {
	t.Helper()
	if want == nil {
		want, werr = readAll(bytes.NewReader(data), contract)
	}
	got, ok, err := readSplit(bytes.NewReader(data), int64(len(data)), mid, contract)
	if !ok {
		if i := bytes.IndexByte(data[min(mid, int64(len(data))):], '\n'); i >= 0 && mid+int64(i)+1 < int64(len(data)) {
			t.Errorf("%s, cut at %d (contract %v): not split, though a line ends after the cut", name, mid, contract)
		}
		return
	}
	if !reflect.DeepEqual(got, want) || !sameError(err, werr) {
		t.Errorf("%s, cut at %d (contract %v): %d ops, %v; want %d ops, %v", name, mid, contract, len(got), err, len(want), werr)
	}
}

// TestReadSplitMatchesReadAll cuts histories at many places: the two
// halves read side by side give what one reader gives, errors and their
// line numbers included.
func TestReadSplitMatchesReadAll(t *testing.T) {
	for name, data := range splitInputs(t) {
		step := max(1, len(data)/200)
		if len(data) > 64<<10 {
			step = len(data) / 20
		}
		for _, contract := range []bool{false, true} {
			want, werr := readAll(bytes.NewReader(data), contract)
			for mid := 0; mid <= len(data); mid += step {
				checkSplit(t, name, data, int64(mid), contract, want, werr)
			}
		}
	}
}

// TestReadFileSplits reads large histories in two halves (splitMin 0),
// with the result of one reader, and says so when a half is bad.
func TestReadFileSplits(t *testing.T) {
	saved := splitMin
	splitMin = 0
	defer func() { splitMin = saved }()
	dir := t.TempDir()
	for name, data := range splitInputs(t) {
		path := filepath.Join(dir, "h.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, contract := range []bool{false, true} {
			want, werr := readAll(bytes.NewReader(data), contract)
			got, err := readFile(path, contract)
			if werr != nil {
				werr = fmt.Errorf("%s: %w", path, werr)
			}
			if !reflect.DeepEqual(got, want) || !sameError(err, werr) {
				t.Errorf("%s (contract %v): %d ops, %v; want %d ops, %v", name, contract, len(got), err, len(want), werr)
			}
		}
	}
	// A negative control: the comparison sees a line number off by one.
	data := splitInputs(t)["bad second"]
	_, _, err := readSplit(bytes.NewReader(data), int64(len(data)), int64(len(data)/3), true)
	if err == nil || !strings.Contains(err.Error(), "line 6:") {
		t.Fatalf("bad second half: %v, want an error naming line 6", err)
	}
}

// FuzzReadSplit holds readSplit to readAll on any bytes, cut anywhere.
func FuzzReadSplit(f *testing.F) {
	for _, data := range splitInputs(f) {
		if len(data) < 4096 {
			f.Add(data, uint16(len(data)/2), false)
			f.Add(data, uint16(len(data)/3), true)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, mid uint16, contract bool) {
		decodeMu.Lock()
		defer decodeMu.Unlock()
		checkSplit(t, "fuzz", data, int64(mid)%(int64(len(data))+1), contract, nil, nil)
	})
}

// TestAdviseHugePages: advising any slice, however placed and sized, keeps
// what it holds and what is written to it.
func TestAdviseHugePages(t *testing.T) {
	for _, n := range []int{0, 1, 100, (2<<20)/int(unsafe.Sizeof(Op{})) + 1, 100000} {
		ops := make([]Op, n)
		for i := range ops {
			ops[i].Index = int64(i)
		}
		adviseHugePages(ops)
		adviseHugePages(ops[min(n, 3):])
		for i := range ops {
			if ops[i].Index != int64(i) {
				t.Fatalf("%d ops: op %d has index %d after the advice", n, i, ops[i].Index)
			}
			ops[i].Time = int64(i)
		}
		for i := range ops {
			if ops[i].Time != int64(i) {
				t.Fatalf("%d ops: op %d lost its time", n, i)
			}
		}
	}
}
