package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// oddLines are lines that json.Unmarshal accepts in unusual ways, or
// refuses: the decoder must do exactly as it does. They seed the fuzzers
// too.
var oddLines = []string{
	// What the writer writes.
	`{"index":0,"time":1200,"process":0,"type":"invoke","f":"acquire","key":"k0"}`,
	`{"index":1,"time":51000,"process":0,"type":"ok","f":"acquire","key":"k0","fence":33,"lease_ms":1000}`,
	`{"index":2,"time":52000,"process":-1,"type":"info","f":"start-pause","value":{"process":0,"ms":2500}}`,
	`{"index":3,"time":9,"process":1,"type":"ok","f":"write","key":"k0","value":7,"fence":34,"tx":true}`,
	`{"index":4,"time":9,"process":1,"type":"fail","f":"acquire","key":"k0","error":"lock is busy"}`,
	`{"index":5,"time":9,"process":1,"type":"info","f":"write","key":"k0","error":"read tcp \u003c-\u003e: i/o timeout \"x\""}`,
	// The writer's keys, the optional ones in another order, twice, null,
	// or not quite theirs.
	`{"index":6,"time":9,"process":1,"type":"ok","f":"write","fence":3,"value":2,"key":"k0","fence":4,"tx":false}`,
	`{"index":7,"time":9,"process":1,"type":"ok","f":"acquire","key":null,"lease_ms":null,"fence":null,"error":null}`,
	`{"index":8,"time":9,"process":1,"type":"ok","f":"acquire","kex":"k0"}`,
	`{"index":9,"time":9,"process":1,"type":"ok","f":"acquire","Key":"k0"}`,
	`{"index":10,"time":9,"process":1,"type":"ok","f":"acquire",}`,
	`{"index":11,"time":9,"process":1,"type":"ok","f":"acquire","key":"k0"}}`,
	// White space, empty objects, other top-level values.
	` { "index" : 1 ,	"f" : "x"
	} `,
	`{}`, `{ }`, `null`, ` null `, `[]`, `"x"`, `1`, `true`, ``, ` `, `{`, `}`,
	// Trailing garbage, bad syntax.
	`{"index":1}x`, `{"index":1}{}`, `{"index":1}}`, `{"index":1,}`, `{,}`, `{"index"1}`,
	`{"index":1 "time":2}`, `{"index":1`, `{'index':1}`, `{index:1}`, `{"index":1,"f":"x"`,
	// Integers.
	`{"index":"1"}`, `{"index":1.0}`, `{"index":1e3}`, `{"index":1E3}`, `{"index":-0}`, `{"index":01}`,
	`{"index":-}`, `{"index":-01}`, `{"index":+1}`, `{"index":.5}`, `{"index":1.}`, `{"index":0x10}`,
	`{"index":9223372036854775807}`, `{"index":9223372036854775808}`,
	`{"index":-9223372036854775808}`, `{"index":-9223372036854775809}`,
	`{"index":12345678901234567890}`, `{"index":00000000000000000001}`, `{"index":true}`,
	`{"index":{}}`, `{"index":[1]}`, `{"time":-5}`, `{"process":2147483648}`, `{"process":-1}`,
	`{"process":9223372036854775808}`, `{"index":1,"index":2}`, `{"index":1,"index":null}`,
	// Strings.
	`{"type":1}`, `{"type":null}`, `{"type":"ok","type":null}`, `{"type":"ok","type":"fail"}`,
	`{"f":true}`, `{"key":["k"]}`, `{"error":{}}`, `{"error":""}`, `{"key":""}`,
	`{"error":"a\"b\\c\/d\b\f\n\r\t"}`, `{"error":"\u00e9\u20AC"}`, `{"error":"\ud83d\ude00"}`,
	`{"error":"\ud83d"}`, `{"error":"\ud83dx"}`, `{"error":"\ud83d\u0041"}`, `{"error":"\ude00\ud83d"}`,
	`{"error":"\ud83d\ud83d\ude00"}`, `{"error":"\u0000"}`, `{"error":"\u12g4"}`, `{"error":"\x"}`,
	`{"error":"\'"}`, "{\"error\":\"a\tb\"}", "{\"error\":\"a\x00b\"}", "{\"error\":\"\xff\"}",
	"{\"error\":\"a\xe2\x82\"}", "{\"error\":\"\xe2\x82\xac\"}", "{\"error\":\"\u2028\u2029\"}",
	"{\"error\":\"\xed\xa0\x80\"}", "{\"error\":\"\x7f\"}", `{"error":"\`, `{"error":"\u12`,
	`{"key":"k0","key":"k1"}`, `{"f":"acquire"}`, `{"f":"Acquire"}`,
	// Pointers.
	`{"fence":null}`, `{"fence":5,"fence":null}`, `{"fence":null,"fence":5}`, `{"fence":5,"fence":6}`,
	`{"fence":"5"}`, `{"fence":5.5}`, `{"lease_ms":-1}`, `{"lease_ms":null}`, `{"lease_ms":[]}`,
	// Values.
	`{"value":null}`, `{"value": {"a" : [1, 2] } }`, `{"value":"str\u00e9"}`, `{"value":[]}`, `{"value":{}}`,
	`{"value":-1.5e+10}`, `{"value":0.5E-3}`, `{"value":tru}`, `{"value":nul}`, `{"value":{"a":1,}}`,
	`{"value":[1,]}`, `{"value":[1 2]}`, `{"value":{"a" 1}}`, `{"value":{1:1}}`, `{"value":1,"value":2}`,
	`{"value":1,"value":null}`, `{"value":true}`, `{"value":false}`, `{"value":"<&>"}`, `{"value":01}`,
	`{"value":-}`, `{"value":1.}`, `{"value":1e}`, `{"value":"\u00"}`, "{\"value\":\"\xff\"}",
	`{"value":[[[[[[[[[[]]]]]]]]]]}`, `{"value":"a\"b"}`, `{"value":{"k":"v\\"}}`,
	// Booleans.
	`{"tx":true}`, `{"tx":false}`, `{"tx":1}`, `{"tx":"true"}`, `{"tx":null}`, `{"tx":true,"tx":null}`,
	`{"tx":True}`, `{"tx":truee}`,
	// Keys: case, escapes, Unicode folding, unknown fields, duplicates.
	`{"Index":1}`, `{"INDEX":1}`, `{"LEASE_MS":5}`, `{"Lease_Ms":5}`, `{"index":1,"Index":2}`,
	`{"Index":2,"index":1}`, `{"\u0069ndex":3}`, `{"proce\u017f\u017f":3}`, "{\"proceſſ\":3}",
	`{"\u212aey":"x"}`, "{\"\u212aey\":\"x\"}", `{"F":"x"}`, `{"TX":true}`, `{"Value":1}`,
	`{"foo":{"bar":[1,2,{"x":null}]},"index":1}`, `{"f\u006fo":1}`, `{"":1}`, "{\"\xff\":1}",
	`{"index ":1}`, `{"in\"dex":1}`, `{"lease-ms":1}`, `{"leasems":1}`, `{"foo":}`, `{"foo":bar}`,
	`{"index":1,"index":2,"time":3,"foo":"bar","time":4}`,
}

// deep returns a line whose value nests n arrays.
func deep(n int) string {
	return `{"value":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
}

func TestDecodeOpMatchesJSON(t *testing.T) {
	lines := append(oddLines, deep(maxDepth-1), deep(maxDepth), deep(maxDepth+1), deep(10000), deep(10001))
	for _, line := range lines {
		checkDecode(t, []byte(line))
	}
}

// checkDecode holds decodeOp, and a Reader's decoder, to json.Unmarshal on
// line: the same Op, or the same error; and the fields the fast path finds
// to those json.Unmarshal finds.
func checkDecode(t *testing.T, line []byte) {
	t.Helper()
	var want Op
	werr := json.Unmarshal(line, &want)
	got, fields, err := decodeOp(line)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("%q: error %v, json.Unmarshal's %v", line, err, werr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %s\nwant %s", line, dump(got), dump(want))
	}
	_, wantFields, _ := slowDecode(line)
	if fields != wantFields {
		t.Fatalf("%q: fields %q, want %q", line, fields, wantFields)
	}
	var op Op
	if fields, err := readerDecoder.decode(line, &op); err != nil || fields != wantFields || !reflect.DeepEqual(op, want) {
		t.Fatalf("%q: with arenas: %s, %q, %v", line, dump(op), fields, err)
	}
}

// readerDecoder decodes as a Reader does, interning and from arenas, line
// after line; the fuzzers share it.
var readerDecoder = newDecoder()

func dump(op Op) string {
	s := strings.TrimSuffix(string(must(json.Marshal(op))), "}")
	if op.Fence != nil {
		s += ` *fence ` + string(must(json.Marshal(*op.Fence)))
	}
	return s + "}"
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestDecodeOpFields(t *testing.T) {
	tests := []struct {
		line   string
		fields string
		fast   bool // the fast path takes it
	}{
		{oddLines[0], "index,time,process,type,f,key", true},
		{oddLines[1], "index,time,process,type,f,key,fence,lease_ms", true},
		{oddLines[2], "index,time,process,type,f,value", true},
		{oddLines[3], "index,time,process,type,f,key,value,fence,tx", true},
		{oddLines[4], "index,time,process,type,f,key,error", true},
		{oddLines[5], "index,time,process,type,f,key,error", true},
		{`{}`, "", true},
		{`null`, "", false},
		{`{"fence":null,"value":null,"tx":null}`, "value,fence,tx", true},
		{`{"Index":1,"LEASE_MS":2,"foo":[{"a":"\u00e9"}]}`, "index,lease_ms", true},
		{`{"\u0069ndex":3}`, "index", false},
		{"{\"\u212aey\":\"x\"}", "key", false},
		{"{\"error\":\"\xff\\ud83d\"}", "error", true},
		{deep(maxDepth + 1), "value", false},
	}
	for _, tc := range tests {
		op, fields, err := decodeOp([]byte(tc.line))
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if fields.String() != tc.fields {
			t.Errorf("%q: fields %q, want %q", tc.line, fields, tc.fields)
		}
		var d decoder
		if _, fast := d.fast([]byte(tc.line), &op); fast != tc.fast {
			t.Errorf("%q: fast path %v, want %v", tc.line, fast, tc.fast)
		}
	}
	if f := fieldIndex | fieldF; !f.Has(fieldF) || f.Has(fieldF|fieldKey) || !f.Has(0) {
		t.Error("fieldSet.Has")
	}
}

// TestDecodeAllocs holds a Reader's decoder to no allocation per line, but
// for a new string.
func TestDecodeAllocs(t *testing.T) {
	d := newDecoder()
	var op Op
	for _, line := range oddLines[:6] {
		b := []byte(line)
		if n := testing.AllocsPerRun(1000, func() { must(d.decode(b, &op)) }); n != 0 {
			t.Errorf("%s: %v allocations", line, n)
		}
	}
}

// testdataFiles are every history this repository keeps.
func testdataFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"testdata/*.jsonl", "../checker/testdata/*.jsonl"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("only %d histories in testdata", len(files))
	}
	return files
}

func TestReadAllMatchesStdlib(t *testing.T) {
	inputs := map[string][]byte{}
	for _, f := range testdataFiles(t) {
		inputs[f] = must(os.ReadFile(f))
	}
	var gen bytes.Buffer
	for _, op := range genHistory(3, 8, 16, 20000) {
		gen.Write(must(json.Marshal(op)))
		gen.WriteByte('\n')
	}
	inputs["generated"] = gen.Bytes()
	for _, line := range oddLines {
		inputs["line "+line] = []byte(line + "\n" + oddLines[0] + "\n")
	}
	for name, data := range inputs {
		want, werr := stdlibReadAll(bytes.NewReader(data))
		for how, r := range map[string]io.Reader{
			"seeker":   bytes.NewReader(data),
			"stream":   io.MultiReader(bytes.NewReader(data)),
			"one byte": iotest.OneByteReader(bytes.NewReader(data)),
		} {
			got, err := ReadAll(r)
			if !reflect.DeepEqual(got, want) || !sameError(err, werr) {
				t.Errorf("%s, %s: %d ops, %v; want %d ops, %v", name, how, len(got), err, len(want), werr)
			}
		}
	}
	for _, f := range testdataFiles(t) {
		got, err := ReadFile(f)
		if err != nil || !reflect.DeepEqual(got, must(stdlibReadAll(bytes.NewReader(inputs[f])))) {
			t.Errorf("ReadFile(%s): %v", f, err)
		}
	}
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error() && errors.Is(a, ErrTruncated) == errors.Is(b, ErrTruncated)
}

// TestReadAllCut cuts a history at every byte of its last lines: the
// reader must say what the plain one says.
func TestReadAllCut(t *testing.T) {
	data := must(os.ReadFile("testdata/design-example.jsonl"))
	data = append(data, " \n\n"+oddLines[3]+"\r\n"...)
	for n := len(data) - 250; n <= len(data); n++ {
		want, werr := stdlibReadAll(bytes.NewReader(data[:n]))
		got, err := ReadAll(bytes.NewReader(data[:n]))
		if !reflect.DeepEqual(got, want) || !sameError(err, werr) {
			t.Errorf("cut at %d: %d ops, %v; want %d ops, %v", n, len(got), err, len(want), werr)
		}
	}
}

// TestReaderLongLine reads lines longer than the Reader's buffer.
func TestReaderLongLine(t *testing.T) {
	long := `{"index":1,"time":2,"process":3,"type":"ok","f":"x","value":[` + strings.Repeat(`"abcdefgh",`, 60000) + `1]}`
	data := oddLines[0] + "\n" + long + "\n" + long + "\n" + long
	want, werr := stdlibReadAll(strings.NewReader(data))
	got, err := ReadAll(strings.NewReader(data))
	if werr != nil || err != nil || len(got) != 4 || !reflect.DeepEqual(got, want) {
		t.Fatalf("%d ops, %v; want %d ops, %v", len(got), err, len(want), werr)
	}
	got, err = ReadAll(strings.NewReader(data[:len(data)-1]))
	if len(got) != 3 || !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("cut: %d ops, %v", len(got), err)
	}
}

func TestReaderNextFields(t *testing.T) {
	r := NewReader(strings.NewReader(oddLines[1] + "\n\n" + `{"Index":2,"fence":null}` + "\n" + `{"index":"x"}` + "\n"))
	op, fields, err := r.nextFields()
	if err != nil || op.Index != 1 || fields.String() != "index,time,process,type,f,key,fence,lease_ms" {
		t.Fatalf("%+v, %q, %v", op, fields, err)
	}
	op, fields, err = r.nextFields()
	if err != nil || op.Index != 2 || fields != fieldIndex|fieldFence || r.lineNumber() != 3 {
		t.Fatalf("%+v, %q, %v, line %d", op, fields, err, r.lineNumber())
	}
	if _, _, err = r.nextFields(); err == nil || !strings.Contains(err.Error(), "history: line 4: json: cannot unmarshal string") {
		t.Fatalf("bad line: %v", err)
	}
	if _, _, err = r.nextFields(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// TestReadAllSize holds ReadAll to one allocation of the result when it
// can count the lines first, from where the reader stands.
func TestReadAllSize(t *testing.T) {
	data := must(os.ReadFile("testdata/design-example.jsonl"))
	r := bytes.NewReader(data)
	first := bytes.IndexByte(data, '\n') + 1
	if _, err := r.Seek(int64(first), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	ops, err := ReadAll(r)
	if err != nil || len(ops) != 4 || cap(ops) != 4 || ops[0].Index != 1 {
		t.Fatalf("%d ops (cap %d), first %d, %v", len(ops), cap(ops), ops[0].Index, err)
	}
	for _, tc := range []struct {
		in string
		n  int
	}{{"", 0}, {"a", 1}, {"a\n", 1}, {"a\nb", 2}, {"\n\n", 2}} {
		if n, err := countLines(strings.NewReader(tc.in)); n != tc.n || err != nil {
			t.Errorf("countLines(%q) = %d, %v; want %d", tc.in, n, err, tc.n)
		}
	}
	if n, err := countLines(unseekable{}); n != 0 || err != nil {
		t.Errorf("countLines(unseekable) = %d, %v", n, err)
	}
}

// unseekable is a ReadSeeker that cannot seek, as a pipe.
type unseekable struct{ io.Reader }

func (unseekable) Seek(int64, int) (int64, error) { return 0, errors.New("illegal seek") }
