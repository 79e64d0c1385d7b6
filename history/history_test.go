package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// waitFor polls cond until it holds. The guard only stops a broken build
// from hanging the test binary; it asserts nothing about speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	guard := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(guard) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func createFile(t *testing.T) (*os.File, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, p
}

// TestRecorderRoundTrip records from several goroutines at once, then reads
// the file back: indexes 0..n-1 without gaps, non-decreasing times, and every
// field preserved, including the optional pointers and raw JSON values.
func TestRecorderRoundTrip(t *testing.T) {
	f, p := createFile(t)
	rec := history.NewRecorder(f, history.RecorderOptions{FlushEvery: time.Millisecond})

	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				typ := history.Invoke
				if i%2 == 1 {
					typ = history.OK
				}
				if _, err := rec.Record(history.Op{Process: g, Type: typ, F: history.Read, Key: "k0"}); err != nil {
					t.Errorf("record: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()

	// Then ops exercising every field, sequentially so we know their order.
	special := []history.Op{
		{Process: 0, Type: history.OK, F: history.Acquire, Key: "k1", Fence: history.Int64(33), LeaseMS: history.Int64(1000)},
		{Process: 0, Type: history.OK, F: history.Acquire, Key: "k1", Fence: history.Int64(0), LeaseMS: history.Int64(0)},
		{Process: 1, Type: history.OK, F: history.Read, Key: "k1", Value: history.IntValue(0)},
		{Process: 1, Type: history.OK, F: history.Write, Key: "k1", Value: history.IntValue(-7), Fence: history.Int64(34)},
		{Process: history.NemesisProcess, Type: history.Info, F: "start-pause", Value: history.ObjectValue(map[string]any{"process": 0, "ms": 2500})},
		{Process: 2, Type: history.Info, F: history.Acquire, Key: "k1", Error: "timeout: context deadline exceeded"},
	}
	for _, op := range special {
		if _, err := rec.Record(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := rec.Record(history.Op{F: history.Read}); !errors.Is(err, history.ErrClosed) {
		t.Errorf("Record after Close: got %v, want ErrClosed", err)
	}
	if err := rec.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	ops, err := history.ReadFile(p)
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	want := goroutines*each + len(special)
	if len(ops) != want {
		t.Fatalf("read %d ops, want %d", len(ops), want)
	}
	if got := rec.Len(); got != int64(want) {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	perProcess := map[int]int{}
	for i, op := range ops {
		if op.Index != int64(i) {
			t.Fatalf("op %d has index %d", i, op.Index)
		}
		if i > 0 && op.Time < ops[i-1].Time {
			t.Fatalf("op %d: time %d < previous %d", i, op.Time, ops[i-1].Time)
		}
		if i < goroutines*each {
			perProcess[op.Process]++
		}
	}
	for g := range goroutines {
		if perProcess[g] != each {
			t.Errorf("process %d: %d ops in the file, want %d", g, perProcess[g], each)
		}
	}

	tail := ops[goroutines*each:]
	for i, got := range tail {
		w := special[i]
		w.Index, w.Time = got.Index, got.Time
		if !reflect.DeepEqual(got, w) {
			t.Errorf("special op %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
	if v, ok := tail[2].Int(); !ok || v != 0 {
		t.Errorf("read of 0: Int() = %d, %v", v, ok)
	}
	if v, ok := tail[3].Int(); !ok || v != -7 {
		t.Errorf("write of -7: Int() = %d, %v", v, ok)
	}
	if _, ok := tail[4].Int(); ok {
		t.Error("object value: Int() reports an integer")
	}
	var obj map[string]int
	if err := json.Unmarshal(tail[4].Value, &obj); err != nil || obj["process"] != 0 || obj["ms"] != 2500 {
		t.Errorf("nemesis value = %s (%v)", tail[4].Value, err)
	}
	if !tail[4].IsNemesis() || tail[0].IsNemesis() {
		t.Error("IsNemesis wrong")
	}
	if tail[0].FenceOr(-1) != 33 || tail[2].FenceOr(-1) != -1 {
		t.Error("FenceOr wrong")
	}

	// The text itself: optional fields are absent when unset, and a zero
	// that was set is kept.
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != want {
		t.Fatalf("%d lines, want %d", len(lines), want)
	}
	text := lines[goroutines*each:]
	checks := []struct {
		line        int
		has, hasNot []string
	}{
		{0, []string{`"fence":33`, `"lease_ms":1000`, `"key":"k1"`}, []string{`"value"`, `"error"`}},
		{1, []string{`"fence":0`, `"lease_ms":0`}, []string{`"value"`}},
		{2, []string{`"value":0`, `"type":"ok"`, `"f":"read"`}, []string{`"fence"`, `"lease_ms"`, `"error"`}},
		{3, []string{`"value":-7`, `"fence":34`}, []string{`"lease_ms"`}},
		{4, []string{`"process":-1`, `"type":"info"`, `"f":"start-pause"`, `"value":{"ms":2500,"process":0}`}, []string{`"key"`, `"fence"`, `"lease_ms"`, `"error"`}},
		{5, []string{`"error":"timeout: context deadline exceeded"`}, []string{`"value"`, `"fence"`}},
	}
	for _, c := range checks {
		l := text[c.line]
		for _, s := range c.has {
			if !strings.Contains(l, s) {
				t.Errorf("line %q lacks %s", l, s)
			}
		}
		for _, s := range c.hasNot {
			if strings.Contains(l, s) {
				t.Errorf("line %q has %s", l, s)
			}
		}
	}
}

// TestRecorderStreams checks that ops reach the file before Close: the
// flusher writes them out every FlushEvery.
func TestRecorderStreams(t *testing.T) {
	f, p := createFile(t)
	rec := history.NewRecorder(f, history.RecorderOptions{FlushEvery: 2 * time.Millisecond})
	for i := range 3 {
		if _, err := rec.Record(history.Op{Process: i, Type: history.Invoke, F: history.Acquire, Key: "k0"}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the flusher to write the ops", func() bool {
		st, err := os.Stat(p)
		return err == nil && st.Size() > 0
	})
	// The flush is of the whole buffer under the recorder's lock, so what
	// is on disk now is complete lines.
	ops, err := history.ReadFile(p)
	if err != nil {
		t.Fatalf("ReadFile before Close: %v", err)
	}
	if len(ops) != 3 {
		t.Fatalf("before Close: %d ops on disk, want 3", len(ops))
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRecorderCloseFlushes checks the other side: with a flush period that
// never comes, the ops are still buffered until Close writes them.
func TestRecorderCloseFlushes(t *testing.T) {
	f, p := createFile(t)
	rec := history.NewRecorder(f, history.RecorderOptions{FlushEvery: time.Hour})
	for range 3 {
		if _, err := rec.Record(history.Op{Type: history.Invoke, F: history.Acquire, Key: "k0"}); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(p); err != nil || st.Size() != 0 {
		t.Fatalf("before any flush: size %d, err %v (want an empty file: nothing flushed yet)", st.Size(), err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadFile(p)
	if err != nil || len(ops) != 3 {
		t.Fatalf("after Close: %d ops, err %v", len(ops), err)
	}
}

// TestRecorderMemory covers the in-memory recorder (nil writer) used by
// tests and the nemesis engine.
func TestRecorderMemory(t *testing.T) {
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	for i := range 5 {
		got, err := rec.Record(history.Op{Process: i, Type: history.Invoke, F: history.Read, Key: "k0", Index: 99, Time: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got.Index != int64(i) || got.Time < 0 {
			t.Errorf("Record returned index %d time %d", got.Index, got.Time)
		}
	}
	h := rec.History()
	if len(h) != 5 {
		t.Fatalf("History() has %d ops", len(h))
	}
	h[0].F = "mutated"
	if rec.History()[0].F != history.Read {
		t.Error("History() returns the recorder's own slice, not a copy")
	}
	// Five processes may each have one op outstanding.
	if err := history.Validate(context.Background(), rec.History()); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
}

const threeOps = `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0"}
{"index":2,"time":3,"process":0,"type":"invoke","f":"read","key":"k0"}
`

func TestReadAll(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		ops       int
		truncated bool
		errHas    string // "" = no error
	}{
		{name: "complete", in: threeOps, ops: 3},
		{name: "no final newline", in: strings.TrimSuffix(threeOps, "\n"), ops: 3},
		{name: "blank lines", in: "\n" + strings.ReplaceAll(threeOps, "\n", "\n\n"), ops: 3},
		{name: "empty", in: "", ops: 0},
		{name: "cut mid-line", in: threeOps + `{"index":3,"time":4,"proc`, ops: 3, truncated: true, errHas: "line 4"},
		{name: "cut inside a string", in: threeOps + `{"index":3,"time":4,"process":0,"type":"o`, ops: 3, truncated: true},
		{name: "malformed middle line", in: strings.Replace(threeOps, `{"index":1,`, `{"index":1,,`, 1), ops: 1, errHas: "line 2"},
		{name: "garbage middle line", in: strings.Replace(threeOps, "\n", "\nnot json\n", 1), ops: 1, errHas: "line 2"},
		{name: "wrong type in field", in: strings.Replace(threeOps, `"time":2`, `"time":"two"`, 1), ops: 1, errHas: "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := history.ReadAll(strings.NewReader(tc.in))
			if len(ops) != tc.ops {
				t.Errorf("got %d ops, want %d", len(ops), tc.ops)
			}
			for i, op := range ops {
				if op.Index != int64(i) {
					t.Errorf("op %d has index %d", i, op.Index)
				}
			}
			if tc.errHas == "" && !tc.truncated {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, history.ErrTruncated); got != tc.truncated {
				t.Errorf("errors.Is(%v, ErrTruncated) = %v, want %v", err, got, tc.truncated)
			}
			if !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("error %q does not name %q", err, tc.errHas)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
		})
	}
}

func TestReadFileTruncated(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(p, []byte(threeOps+`{"ind`), 0o644); err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadFile(p)
	if len(ops) != 3 || !errors.Is(err, history.ErrTruncated) {
		t.Fatalf("got %d ops, err %v; want 3 ops and ErrTruncated", len(ops), err)
	}
	if !strings.Contains(err.Error(), p) {
		t.Errorf("error %q does not name the file", err)
	}
	if _, err := history.ReadFile(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestWriteAllReadAll(t *testing.T) {
	in := []history.Op{
		{Index: 0, Time: 10, Process: 0, Type: history.Invoke, F: history.Write, Key: "k0", Value: history.IntValue(1), Fence: history.Int64(5)},
		{Index: 1, Time: 20, Process: 0, Type: history.Fail, F: history.Write, Key: "k0", Value: history.IntValue(1), Fence: history.Int64(5), Error: "stale fence 5 < 6"},
	}
	var buf bytes.Buffer
	if err := history.WriteAll(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := history.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

// op builds a synthetic op; indexes and times are filled by seq.
func op(p int, typ history.Type, f string) history.Op {
	return history.Op{Process: p, Type: typ, F: f, Key: "k0"}
}

func seq(ops ...history.Op) []history.Op {
	for i := range ops {
		ops[i].Index = int64(i)
		ops[i].Time = int64(i * 10)
	}
	return ops
}

func nem(f string) history.Op {
	return history.Op{Process: history.NemesisProcess, Type: history.Info, F: f, Value: json.RawMessage(`{"process":0}`)}
}

func TestValidate(t *testing.T) {
	good := seq(
		op(0, history.Invoke, history.Acquire),
		op(1, history.Invoke, history.Acquire),
		nem("start-pause"),
		op(0, history.OK, history.Acquire),
		nem("stop-pause"),
		op(1, history.Fail, history.Acquire),
		op(0, history.Invoke, history.Read),
		nem("start-pause"), // nemesis ops never count as outstanding
		op(0, history.Info, history.Read),
		op(1, history.Invoke, history.Acquire), // left outstanding at the end: fine
	)
	gap := seq(op(0, history.Invoke, history.Acquire), op(0, history.OK, history.Acquire))
	gap[1].Index = 2
	backwards := seq(op(0, history.Invoke, history.Acquire), op(1, history.Invoke, history.Acquire))
	backwards[1].Time = backwards[0].Time - 1
	sameTime := seq(op(0, history.Invoke, history.Acquire), op(0, history.OK, history.Acquire))
	sameTime[1].Time = sameTime[0].Time
	badType := seq(op(0, history.Invoke, history.Acquire), op(0, "done", history.Acquire))

	tests := []struct {
		name   string
		ops    []history.Op
		errHas string // "" = valid
	}{
		{"good", good, ""},
		{"empty", nil, ""},
		{"equal times", sameTime, ""},
		{"index gap", gap, "index 2"},
		{"time backwards", backwards, "backwards"},
		{"two outstanding", seq(op(0, history.Invoke, history.Acquire), op(0, history.Invoke, history.Read)), "outstanding"},
		{"completion without invoke", seq(op(0, history.OK, history.Acquire)), "nothing outstanding"},
		{"completion of another process", seq(op(0, history.Invoke, history.Acquire), op(1, history.OK, history.Acquire)), "nothing outstanding"},
		{"completion with different f", seq(op(0, history.Invoke, history.Acquire), op(0, history.OK, history.Release)), "invoked acquire"},
		{"two completions", seq(op(0, history.Invoke, history.Read), op(0, history.OK, history.Read), op(0, history.OK, history.Read)), "nothing outstanding"},
		{"unknown type", badType, "unknown type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := history.Validate(context.Background(), tc.ops)
			if tc.errHas == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("got %v, want an error containing %q", err, tc.errHas)
			}
		})
	}

	shifted := seq(op(0, history.Invoke, history.Acquire))
	shifted[0].Index = 1
	if err := history.Validate(context.Background(), shifted); err == nil {
		t.Error("a history starting at index 1 is accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := history.Validate(ctx, good); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v", err)
	}
}

// TestDocsExample is the golden example: the history shown in docs/history.md
// parses, is valid, and encodes back byte for byte.
func TestDocsExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "design-example.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 5 {
		t.Fatalf("%d ops, want 5", len(ops))
	}
	if err := history.Validate(context.Background(), ops); err != nil {
		t.Errorf("Validate: %v", err)
	}
	want := []history.Op{
		{Index: 0, Time: 1200, Process: 0, Type: history.Invoke, F: history.Acquire, Key: "k0"},
		{Index: 1, Time: 51000, Process: 0, Type: history.OK, F: history.Acquire, Key: "k0", Fence: history.Int64(33), LeaseMS: history.Int64(1000)},
		{Index: 2, Time: 52000, Process: -1, Type: history.Info, F: "start-pause", Value: json.RawMessage(`{"process":0,"ms":2500}`)},
		{Index: 3, Time: 1300000000, Process: 1, Type: history.Invoke, F: history.Acquire, Key: "k0"},
		{Index: 4, Time: 1300060000, Process: 1, Type: history.OK, F: history.Acquire, Key: "k0", Fence: history.Int64(34), LeaseMS: history.Int64(1000)},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Errorf("parsed:\n%+v\nwant:\n%+v", ops, want)
	}
	var buf bytes.Buffer
	if err := history.WriteAll(&buf, ops); err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(data) {
		t.Errorf("re-encoded differs:\n%s\nwant:\n%s", buf.String(), data)
	}
}

// TestIntValues: the two values of one allocation are each IntValue's,
// and appending to the first does not write over the second.
func TestIntValues(t *testing.T) {
	for _, tc := range [][2]int64{{0, 1}, {-1, 0}, {41, 42}, {999, 1000}, {math.MaxInt64 - 1, math.MaxInt64}, {math.MinInt64, math.MinInt64 + 1}} {
		a, b := history.IntValues(tc[0], tc[1])
		if string(a) != string(history.IntValue(tc[0])) || string(b) != string(history.IntValue(tc[1])) {
			t.Errorf("IntValues(%d, %d) = %s, %s", tc[0], tc[1], a, b)
		}
		_ = append(a, '9')
		if string(b) != string(history.IntValue(tc[1])) {
			t.Errorf("IntValues(%d, %d): appending to the first changed the second to %s", tc[0], tc[1], b)
		}
	}
}
