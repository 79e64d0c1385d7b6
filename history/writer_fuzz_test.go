package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// FuzzRecorderWritesWhatItStamped holds the Recorder to the plain way of
// writing a history: the file is, byte for byte, WriteAll of the ops its
// Record calls returned, in index order, their times in that order too;
// the ops are recorded from 1 to 4 goroutines at once, in numbers that
// cross buffer flushes (every millisecond). An op whose value is not JSON
// (bad > 0: the bad-th op, the goroutine alone) is refused as it comes: it
// and every later op return the error, Close returns it, and the file
// holds a prefix of the ops stamped before it. (It was written for a
// Recorder that handed its ops to a writer goroutine, measured and not
// kept: docs/bench.md.)
func FuzzRecorderWritesWhatItStamped(f *testing.F) {
	seedLines(f, func(line []byte) { f.Add(line, uint16(1300), uint8(3), uint16(0)) })
	f.Add([]byte(`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","key":"k0"}`), uint16(700), uint8(0), uint16(600))
	f.Add([]byte(`{"index":0,"time":0,"process":1,"type":"ok","f":"read","key":"k1","value":7}`), uint16(40), uint8(1), uint16(5))
	f.Fuzz(func(t *testing.T, line []byte, n uint16, goroutines uint8, bad uint16) {
		op, _, err := decodeOp(line)
		if err != nil {
			return
		}
		total := int(n%2000) + 1
		g := int(goroutines%4) + 1
		if bad > 0 {
			// Sequential, so that which ops come after the bad one is
			// known.
			g = 1
		}
		path := filepath.Join(t.TempDir(), "history.jsonl")
		file, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		rec := NewRecorder(file, RecorderOptions{FlushEvery: time.Millisecond})
		var mu sync.Mutex
		var stamped []Op
		var wg sync.WaitGroup
		errs := make([]error, g)
		for p := range g {
			wg.Go(func() {
				for i := p; i < total; i += g {
					o := op
					o.Process = p
					if bad > 0 && i == int(bad%2000) {
						o.Value = json.RawMessage("{")
					}
					done, err := rec.Record(o)
					switch {
					case err != nil && errs[p] == nil:
						errs[p] = err
					case err == nil && errs[p] != nil:
						t.Errorf("op %d recorded after an error: %v", done.Index, errs[p])
					}
					if err == nil {
						mu.Lock()
						stamped = append(stamped, done)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		cerr := rec.Close()
		wantBad := bad > 0 && int(bad%2000) < total
		if got := errs[0] != nil; got != wantBad {
			t.Fatalf("error %v, want one: %v", errs[0], wantBad)
		}
		if wantBad {
			if !errors.Is(cerr, errs[0]) && cerr.Error() != errs[0].Error() {
				t.Fatalf("Close: %v, want the recording's error %v", cerr, errs[0])
			}
			// The plain recorder did not flush after its error: what the
			// file has is a prefix of the ops before it.
			got, _ := os.ReadFile(path)
			var want bytes.Buffer
			if err := WriteAll(&want, stamped); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(want.Bytes(), got) {
				t.Fatalf("the file is not a prefix of the ops stamped before the error")
			}
			return
		}
		if cerr != nil {
			t.Fatalf("Close: %v", cerr)
		}
		slices.SortFunc(stamped, func(a, b Op) int { return int(a.Index - b.Index) })
		for i := range stamped {
			if stamped[i].Index != int64(i) {
				t.Fatalf("stamped index %d at %d", stamped[i].Index, i)
			}
			if i > 0 && stamped[i].Time < stamped[i-1].Time {
				t.Fatalf("op %d's time %d before op %d's %d", i, stamped[i].Time, i-1, stamped[i-1].Time)
			}
		}
		var want bytes.Buffer
		if err := WriteAll(&want, stamped); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("the file (%d bytes) is not WriteAll of the %d ops stamped (%d bytes)", len(got), len(stamped), want.Len())
		}
	})
}
