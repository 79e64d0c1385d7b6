package history

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// opLine returns an op's line (without its newline) exactly n bytes long,
// its error padded with x.
func opLine(n int) string {
	head, tail := `{"index":1,"time":2,"process":0,"type":"fail","f":"acquire","key":"k0","error":"`, `"}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// endless is a line with no end: n bytes of x, then EOF.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n == 0 {
		return 0, io.EOF
	}
	m := min(len(p), e.n)
	for i := range p[:m] {
		p[i] = 'x'
	}
	e.n -= m
	return m, nil
}

// TestReaderCapsLineLength: a line of MaxLineBytes is read; a longer one
// is refused, naming its line, whether it ends or not — without holding
// more of it than the cap.
func TestReaderCapsLineLength(t *testing.T) {
	first := opLine(100)
	data := first + "\n" + opLine(MaxLineBytes) + "\n"
	ops, err := ReadAll(strings.NewReader(data))
	if err != nil || len(ops) != 2 || len(ops[1].Error) < MaxLineBytes-100 {
		t.Fatalf("a line of the cap: %d ops, %v", len(ops), err)
	}
	data = first + "\n" + first + "\n"
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{
		{"a line past the cap", strings.NewReader(data + opLine(MaxLineBytes+1) + "\n" + first + "\n")},
		{"a last line past the cap, cut off", strings.NewReader(data + opLine(MaxLineBytes+1))},
		{"a line with no end", io.MultiReader(strings.NewReader(data), &endless{n: 8 * MaxLineBytes})},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ops, err := ReadAll(tc.r)
		runtime.ReadMemStats(&after)
		if len(ops) != 2 || !errors.Is(err, ErrLineTooLong) || errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "line 3") {
			t.Errorf("%s: %d ops, %v; want 2 and ErrLineTooLong naming line 3", tc.name, len(ops), err)
		}
		// Gathering the cap's worth takes twice that, as a slice grows.
		if got := after.TotalAlloc - before.TotalAlloc; got > 5*MaxLineBytes {
			t.Errorf("%s: reading it took %d MiB", tc.name, got>>20)
		}
	}
}

// TestReadFileCapsLineLength: ReadFile refuses a line past the cap in
// either half of a file it reads in two, naming the file and the line;
// and a file that is not a regular one (/dev/zero: a line with no end,
// which it cannot count first) ends with the same error.
func TestReadFileCapsLineLength(t *testing.T) {
	saved := splitMin
	splitMin = 1
	defer func() { splitMin = saved }()
	short := opLine(100) + "\n"
	for _, at := range []int{2, 40} {
		p := filepath.Join(t.TempDir(), "h.jsonl")
		var b bytes.Buffer
		for i := range 41 {
			if i == at {
				b.WriteString(opLine(MaxLineBytes+10) + "\n")
				continue
			}
			b.WriteString(short)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(p)
		if want := p + ": history: line " + strconv.Itoa(at+1) + ":"; !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), want) {
			t.Errorf("long line %d: %v; want ErrLineTooLong and %q", at+1, err, want)
		}
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero"); !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "/dev/zero: history: line 1:") {
			t.Errorf("/dev/zero: %v", err)
		}
	}
}
