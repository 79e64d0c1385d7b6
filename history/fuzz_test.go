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

// FuzzDecodeWrittenLine holds decodeOp to json.Unmarshal on lines as the
// writer writes them (appendOp), with any of the optional fields there or
// not and any values: the lines the decoder's fast path for the writer's
// own form (decoder.written) takes, and, cut short anywhere, lines it
// must hand to the general path.
func FuzzDecodeWrittenLine(f *testing.F) {
	f.Add(int64(0), int64(1200), 0, "invoke", "acquire", "k0", []byte(nil), int64(0), false, int64(0), false, "", false, uint16(0))
	f.Add(int64(1), int64(51000), 3, "ok", "acquire", "k0", []byte(nil), int64(33), true, int64(1000), true, "", false, uint16(0))
	f.Add(int64(2), int64(9), -1, "info", "start-pause", "", []byte(`{"process":0,"ms":2500}`), int64(0), false, int64(0), false, "", false, uint16(0))
	f.Add(int64(3), int64(10), 7, "fail", "write", "k\"1", []byte("12"), int64(-4), true, int64(0), false, "lock is busy: \u2028", true, uint16(30))
	f.Add(int64(1<<62), int64(-5), 1<<40, "OK", "Read", "é", []byte("null"), int64(0), false, int64(-1), true, "\xff", false, uint16(1))
	f.Fuzz(func(t *testing.T, index, at int64, process int, typ, fn, key string, value []byte, fence int64, hasFence bool, lease int64, hasLease bool, errText string, tx bool, cut uint16) {
		op := Op{Index: index, Time: at, Process: process, Type: Type(typ), F: fn, Key: key, Value: value, Error: errText, Tx: tx}
		if hasFence {
			op.Fence = &fence
		}
		if hasLease {
			op.LeaseMS = &lease
		}
		line, err := appendOp(nil, &op)
		if err != nil {
			return
		}
		decodeMu.Lock()
		defer decodeMu.Unlock()
		checkDecode(t, line)
		if c := int(cut); c > 0 && c < len(line) {
			checkDecode(t, line[:len(line)-c])
		}
	})
}
