package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// recordKept records ops with a Recorder writing to a buffer and keeping
// them, and returns its History and what it wrote.
func recordKept(t testing.TB, ops []Op) (kept []Op, file []byte, stamped []Op) {
	t.Helper()
	var buf bytes.Buffer
	r := NewRecorder(&buf, RecorderOptions{Keep: true})
	for _, op := range ops {
		done, _ := r.Record(op) // an op that does not encode is an error, and kept
		stamped = append(stamped, done)
	}
	kept = r.History()
	_ = r.Close()
	return kept, buf.Bytes(), stamped
}

// checkKept holds a writing Recorder's History to its file, read back, and,
// past the file's end (a Recorder stops writing at its first error, and
// does not flush after it), to the ops as recorded.
func checkKept(t *testing.T, ops []Op) {
	t.Helper()
	kept, file, stamped := recordKept(t, ops)
	read, err := ReadAll(bytes.NewReader(file))
	if err != nil && !errors.Is(err, ErrTruncated) { // cut at a buffer's end after an error
		t.Fatalf("the recorder's file does not read back: %v", err)
	}
	if len(kept) != len(ops) {
		t.Fatalf("History has %d ops, %d recorded", len(kept), len(ops))
	}
	if len(read) > 0 && !reflect.DeepEqual(kept[:len(read)], read) {
		t.Fatalf("History\n%v\nwant the file's\n%v", kept[:len(read)], read)
	}
	if rest := stamped[len(read):]; len(rest) > 0 && !reflect.DeepEqual(kept[len(read):], rest) {
		t.Fatalf("after the file's end, History\n%v\nwant the ops recorded\n%v", kept[len(read):], rest)
	}
}

// TestRecorderKeepsItsLines: a Recorder that writes a history keeps it as
// the lines it wrote, so History gives what the file reads back as (a
// Value compacted as the file has it), across many blocks of lines, and
// keeps an op that could not be written in its place.
func TestRecorderKeepsItsLines(t *testing.T) {
	var lines []Op
	for _, l := range oddLines {
		if op, _, err := decodeOp([]byte(l)); err == nil {
			lines = append(lines, op)
		}
	}
	spaced := Op{Process: NemesisProcess, Type: Info, F: "start-pause", Value: json.RawMessage(`{"process": 1, "ms": [1, 2]}`), Error: "\xff<&>"}
	bad := Op{Process: 1, Type: OK, F: Write, Key: "k0", Value: json.RawMessage("{")}
	many := make([]Op, 3*keepBytes/60)
	for i := range many {
		many[i] = Op{Process: i % 7, Type: OK, F: Acquire, Key: fmt.Sprintf("k%d", i%13), Fence: Int64(int64(i)), LeaseMS: Int64(1000)}
	}
	for name, ops := range map[string][]Op{
		"the odd lines":              lines,
		"a value with spaces":        {spaced, spaced},
		"blocks of lines":            many,
		"a value that is not JSON":   {lines[0], bad, lines[1], lines[2]},
		"only a value that is not":   {bad},
		"nothing":                    nil,
		"many, then one that is not": append(append([]Op(nil), many[:keepBytes/50]...), bad, many[0]),
	} {
		t.Run(name, func(t *testing.T) { checkKept(t, ops) })
	}
	kept, _, _ := recordKept(t, many[:3])
	if kept[1].Fence == nil || *kept[1].Fence != 1 || kept[1].F != Acquire {
		t.Fatalf("History()[1] = %+v", kept[1])
	}
	// A negative control: the comparison sees one changed op.
	_, file, _ := recordKept(t, many[:3])
	kept[1].Key = "other"
	if reflect.DeepEqual(kept, must(ReadAll(bytes.NewReader(file)))) {
		t.Fatal("the comparison does not see a changed key")
	}
}

// FuzzRecorderKeep holds a writing Recorder's History to its file, on ops
// decoded from any line, each recorded a few times.
func FuzzRecorderKeep(f *testing.F) {
	seedLines(f, func(line []byte) { f.Add(line, uint8(3)) })
	f.Fuzz(func(t *testing.T, line []byte, times uint8) {
		op, _, err := decodeOp(line)
		if err != nil {
			return
		}
		ops := make([]Op, 1+int(times%8))
		for i := range ops {
			ops[i] = op
			ops[i].Process = i
		}
		checkKept(t, ops)
	})
}
