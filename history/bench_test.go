package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// benchOps is the size of the benchmarks' generated history.
const benchOps = 1000000

var (
	benchOnce  sync.Once
	benchHist  []Op
	benchBytes []byte
)

// benchHistory returns the benchmarks' shared history and its JSONL
// encoding, made once (the encoding by json.Marshal, not by the code under
// test).
func benchHistory(b *testing.B) ([]Op, []byte) {
	b.Helper()
	benchOnce.Do(func() {
		benchHist = genHistory(1, 128, 128, benchOps)
		var buf bytes.Buffer
		buf.Grow(len(benchHist) * 100)
		for i := range benchHist {
			line, err := json.Marshal(&benchHist[i])
			if err != nil {
				panic(err)
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
		benchBytes = buf.Bytes()
	})
	return benchHist, benchBytes
}

// genHistory makes n ops shaped like a real run's (see
// internal/histgen.Realistic, which history cannot import): procs clients
// cycling through acquire (failing with an error when the key is busy),
// read, write and release on keys k0..k<keys-1>, with fences, leases and
// integer values, and a nemesis op with an object value now and then. It
// does not keep the history's rules to the letter (a client's ops are not
// always paired); only the shape of the lines matters here.
func genHistory(seed uint64, procs, keys, n int) []Op {
	r := rand.New(rand.NewPCG(seed, 2))
	ops := make([]Op, 0, n)
	step := make([]int, procs)
	key := make([]string, procs)
	fences := make([]int64, procs)
	values := make([]int64, keys)
	var fence, now int64
	emit := func(o Op) {
		now += 50000 + r.Int64N(950000)
		o.Index, o.Time = int64(len(ops)), now
		ops = append(ops, o)
	}
	for len(ops) < n {
		p := r.IntN(procs)
		if r.IntN(20000) == 0 {
			emit(Op{Process: NemesisProcess, Type: Info, F: "start-pause",
				Value: ObjectValue(map[string]int{"process": p, "ms": 2500})})
		}
		k := r.IntN(keys)
		switch step[p] {
		case 0:
			key[p] = fmt.Sprintf("k%d", k)
			emit(Op{Process: p, Type: Invoke, F: Acquire, Key: key[p]})
		case 1:
			if r.IntN(4) == 0 {
				emit(Op{Process: p, Type: Fail, F: Acquire, Key: key[p], Error: "lock is busy"})
				step[p] = 0
				continue
			}
			fence++
			fences[p] = fence
			emit(Op{Process: p, Type: OK, F: Acquire, Key: key[p], Fence: Int64(fence), LeaseMS: Int64(1000)})
		case 2:
			emit(Op{Process: p, Type: Invoke, F: Read, Key: key[p], Fence: Int64(fences[p])})
		case 3:
			emit(Op{Process: p, Type: OK, F: Read, Key: key[p], Fence: Int64(fences[p]), Value: IntValue(values[k])})
		case 4:
			emit(Op{Process: p, Type: Invoke, F: Write, Key: key[p], Fence: Int64(fences[p]), Value: IntValue(values[k] + 1)})
		case 5:
			values[k]++
			emit(Op{Process: p, Type: OK, F: Write, Key: key[p], Fence: Int64(fences[p]), Value: IntValue(values[k])})
		case 6:
			emit(Op{Process: p, Type: Invoke, F: Release, Key: key[p]})
		case 7:
			emit(Op{Process: p, Type: OK, F: Release, Key: key[p]})
		}
		step[p] = (step[p] + 1) % 8
	}
	return ops
}

// BenchmarkReadAll reads the generated history with ReadAll.
func BenchmarkReadAll(b *testing.B) {
	benchRead(b, ReadAll)
}

// BenchmarkReadAllStdlib reads it the plain way: json.Unmarshal per line.
func BenchmarkReadAllStdlib(b *testing.B) {
	benchRead(b, stdlibReadAll)
}

// BenchmarkReadFileContract reads the generated history from a file as
// `locktorture analyze` does, held to the contract: in two halves side by
// side (see ReadFile), and in one piece for comparison.
func BenchmarkReadFileContract(b *testing.B) {
	want, data := benchHistory(b)
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		min  int64
	}{{"halves", splitMin}, {"one-piece", 1 << 62}} {
		b.Run(bc.name, func(b *testing.B) {
			saved := splitMin
			splitMin = bc.min
			defer func() { splitMin = saved }()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ops, err := ReadFileContract(path)
				if err != nil || len(ops) != len(want) {
					b.Fatalf("%d ops, %v", len(ops), err)
				}
			}
			b.ReportMetric(float64(len(want)*b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

func benchRead(b *testing.B, read func(io.Reader) ([]Op, error)) {
	want, data := benchHistory(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ops, err := read(bytes.NewReader(data))
		if err != nil || len(ops) != len(want) {
			b.Fatalf("%d ops, %v", len(ops), err)
		}
	}
	b.ReportMetric(float64(len(want)*b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkMarshalStdlib encodes the generated history with json.Marshal
// per op.
func BenchmarkMarshalStdlib(b *testing.B) {
	ops, data := benchHistory(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n := 0
		for i := range ops {
			line, err := json.Marshal(&ops[i])
			if err != nil {
				b.Fatal(err)
			}
			n += len(line) + 1
		}
		if n != len(data) {
			b.Fatalf("%d bytes, want %d", n, len(data))
		}
	}
}

// BenchmarkAppendOp encodes the generated history with appendOp, into one
// reused buffer.
func BenchmarkAppendOp(b *testing.B) {
	ops, data := benchHistory(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	var line []byte
	for range b.N {
		n := 0
		for i := range ops {
			var err error
			if line, err = appendOp(line[:0], &ops[i]); err != nil {
				b.Fatal(err)
			}
			n += len(line) + 1
		}
		if n != len(data) {
			b.Fatalf("%d bytes, want %d", n, len(data))
		}
	}
}

// BenchmarkRecorder records the generated history to io.Discard.
func BenchmarkRecorder(b *testing.B) {
	ops, data := benchHistory(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := NewRecorder(io.Discard, RecorderOptions{})
		for i := range ops {
			if _, err := r.Record(ops[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecorderKeep records the generated history as a run does,
// writing it (to io.Discard) and keeping it, then takes its History.
func BenchmarkRecorderKeep(b *testing.B) {
	ops, data := benchHistory(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := NewRecorder(io.Discard, RecorderOptions{Keep: true})
		for i := range ops {
			if _, err := r.Record(ops[i]); err != nil {
				b.Fatal(err)
			}
		}
		if h := r.History(); len(h) != len(ops) {
			b.Fatalf("History has %d ops", len(h))
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// stdlibReadAll is the plain reader, as ReadAll was before the fast
// decoder: bufio.Reader.ReadBytes and json.Unmarshal per line, blank lines
// skipped, a cut-off last line reported as ErrTruncated. It is the
// reference the fast reader is held to.
func stdlibReadAll(r io.Reader) ([]Op, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var ops []Op
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			if err == io.EOF {
				return ops, nil
			}
			return ops, fmt.Errorf("history: read line %d: %w", line, err)
		}
		complete := err == nil
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if !complete {
				return ops, nil
			}
			continue
		}
		var op Op
		if err := json.Unmarshal(b, &op); err != nil {
			if !complete {
				return ops, fmt.Errorf("line %d: %w", line, ErrTruncated)
			}
			return ops, fmt.Errorf("history: line %d: %w", line, err)
		}
		ops = append(ops, op)
	}
}
