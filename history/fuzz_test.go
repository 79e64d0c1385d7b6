package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"sync"
	"testing"
)

// seedLines adds to f every line of the repository's histories and the odd
// lines.
func seedLines(f *testing.F, add func(line []byte)) {
	for _, name := range testdataFiles(f) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			add(bytes.Clone(sc.Bytes()))
		}
	}
	for _, line := range oddLines {
		add([]byte(line))
	}
}

// decodeMu guards readerDecoder, which the fuzzers share.
var decodeMu sync.Mutex

// FuzzDecodeOp holds decodeOp, and a Reader's decoder, to json.Unmarshal.
func FuzzDecodeOp(f *testing.F) {
	seedLines(f, func(line []byte) { f.Add(line) })
	f.Fuzz(func(t *testing.T, line []byte) {
		decodeMu.Lock()
		defer decodeMu.Unlock()
		checkDecode(t, line)
	})
}

// FuzzAppendOp holds appendOp to json.Marshal, on ops decoded from a line,
// with any bytes for a Value and any string for an Error.
func FuzzAppendOp(f *testing.F) {
	seedLines(f, func(line []byte) { f.Add(line, []byte(nil), "") })
	for _, v := range []string{"1", " 1", "1 ", `{"a": 1}`, `"<&>"`, "\"\u2028\"", "\"\xff\"", "01", "[1,]", "{", "nul", `"\u00"`} {
		f.Add([]byte(oddLines[0]), []byte(v), "")
	}
	for _, s := range []string{"<&>", "\u2028\u2029", "\xff", "a\xe2\x82", "\x00\x01\x1f\x7f", "\b\f\n\r\t\"\\/", "é€😀"} {
		f.Add([]byte(oddLines[4]), []byte(nil), s)
	}
	f.Fuzz(func(t *testing.T, line, value []byte, s string) {
		var op Op
		if json.Unmarshal(line, &op) != nil {
			return
		}
		if len(value) > 0 {
			op.Value = value
		}
		if s != "" {
			op.Error = s
		}
		checkAppend(t, &op)
	})
}

// checkAppend holds appendOp to json.Marshal on op: the same bytes or the
// same error, and what was in dst before kept.
func checkAppend(t *testing.T, op *Op) {
	t.Helper()
	want, werr := json.Marshal(op)
	got, err := appendOp([]byte("prefix"), op)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("%+v: error %v, json.Marshal's %v", op, err, werr)
	}
	if err != nil {
		want = nil
	}
	if string(got) != "prefix"+string(want) {
		t.Fatalf("%+v:\n got %q\nwant %q", op, got, "prefix"+string(want))
	}
}
