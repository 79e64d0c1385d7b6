package history

import (
	"bufio"
	"bytes"
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

// FuzzDecodeOp holds DecodeOp, and a Reader's decoder, to json.Unmarshal.
func FuzzDecodeOp(f *testing.F) {
	seedLines(f, func(line []byte) { f.Add(line) })
	f.Fuzz(func(t *testing.T, line []byte) {
		decodeMu.Lock()
		defer decodeMu.Unlock()
		checkDecode(t, line)
	})
}
