package history

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"testing"
)

func TestAppendOpMatchesJSON(t *testing.T) {
	base := Op{Index: 7, Time: 123456789, Process: 3, Type: OK, F: Write, Key: "k1"}
	with := func(f func(*Op)) *Op {
		op := base
		f(&op)
		return &op
	}
	ops := []*Op{
		{},
		&base,
		with(func(o *Op) { o.Index, o.Time, o.Process = math.MaxInt64, math.MinInt64, NemesisProcess }),
		with(func(o *Op) {
			o.Value, o.Fence, o.LeaseMS, o.Error, o.Tx = IntValue(-5), Int64(0), Int64(1000), "lock is busy", true
		}),
		with(func(o *Op) {
			o.Value = ObjectValue(map[string]any{"process": 0, "ms": 2500, "nodes": []string{"n1", "<n2>"}})
		}),
		with(func(o *Op) { o.Value = json.RawMessage{} }),
		with(func(o *Op) { o.Value = json.RawMessage(`{"a": [1, 2]}`) }),
		with(func(o *Op) { o.Value = json.RawMessage(" 1\n") }),
		with(func(o *Op) { o.Value = json.RawMessage(`"a b"`) }),
		with(func(o *Op) { o.Value = json.RawMessage(`"<&>"`) }),
		with(func(o *Op) { o.Value = json.RawMessage("\"\u2028é\xff\"") }),
		with(func(o *Op) { o.Value = json.RawMessage(`"a\"b\\"`) }),
		with(func(o *Op) { o.Value = json.RawMessage(`01`) }),
		with(func(o *Op) { o.Value = json.RawMessage(`1 2`) }),
		with(func(o *Op) { o.Value = json.RawMessage(`{"a":1}x`) }),
		with(func(o *Op) { o.Value = json.RawMessage(`nul`) }),
		with(func(o *Op) { o.Value = json.RawMessage(`null`) }),
		with(func(o *Op) { o.Error = "<script>&amp;</script>" }),
		with(func(o *Op) { o.Error = "\b\f\n\r\t\"\\/\x00\x01\x1f\x7f" }),
		with(func(o *Op) { o.Error = "\u2028\u2029é€😀" }),
		with(func(o *Op) { o.Error = "\xff\xfe a\xe2\x82 \xed\xa0\x80" }),
		with(func(o *Op) { o.Key, o.F, o.Type = "", "", "" }),
		with(func(o *Op) { o.Key, o.F, o.Type = "k\"", "f<", "t\xff" }),
	}
	for _, op := range ops {
		checkAppend(t, op)
	}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = must(appendOp(buf[:0], ops[3])) }); n != 0 {
		t.Errorf("appendOp allocates %v times", n)
	}
}

// TestWriteAllMatchesJSON holds WriteAll to json.Encoder.
func TestWriteAllMatchesJSON(t *testing.T) {
	ops := genHistory(4, 8, 16, 5000)
	ops = append(ops, Op{Error: "<&>\xff", Value: json.RawMessage(`{"a" : "<"}`)})
	var got, want bytes.Buffer
	if err := WriteAll(&got, ops); err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(&want)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("WriteAll and json.Encoder differ")
	}
	bad := append(ops[:2:2], Op{Value: json.RawMessage("{")})
	err := WriteAll(io.Discard, bad)
	if err == nil || err.Error() != "write op 2: json: error calling MarshalJSON for type json.RawMessage: unexpected end of JSON input" {
		t.Fatalf("bad value: %v", err)
	}
}

// TestRecorderMatchesJSON holds the Recorder's lines to json.Marshal's,
// and its error on a Value that is not JSON.
func TestRecorderMatchesJSON(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf, RecorderOptions{})
	var want []byte
	for _, op := range []Op{
		{Process: 1, Type: Invoke, F: Acquire, Key: "k<1>"},
		{Process: 1, Type: OK, F: Acquire, Key: "k<1>", Fence: Int64(3), LeaseMS: Int64(1000)},
		{Process: NemesisProcess, Type: Info, F: "start-pause", Value: json.RawMessage(`{"process": 1}`), Error: "\xff"},
	} {
		done, err := r.Record(op)
		if err != nil {
			t.Fatal(err)
		}
		want = append(append(want, must(json.Marshal(&done))...), '\n')
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("recorded\n%s\nwant\n%s", buf.Bytes(), want)
	}

	r = NewRecorder(io.Discard, RecorderOptions{})
	if _, err := r.Record(Op{Value: json.RawMessage("{")}); err == nil || err.Error() != "encode op 0: json: error calling MarshalJSON for type json.RawMessage: unexpected end of JSON input" {
		t.Fatalf("bad value: %v", err)
	}
	if err := r.Close(); err == nil {
		t.Fatal("Close forgot the encoding error")
	}
}
