package runner

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/histgen"
)

// BenchmarkAnalyze is `locktorture analyze` end to end — parse, every
// checker, results.json and the whole report — on a generated healthy
// history of 1,000,000 ops (128 clients, 128 keys, about 100 MB).
func BenchmarkAnalyze(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	ops := histgen.Realistic(1, 128, 128, 1000000)
	if err := history.WriteAll(w, ops); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(path)
	n := len(ops)
	ops = nil
	b.SetBytes(st.Size())
	b.ResetTimer()
	for range b.N {
		out, err := Analyze(context.Background(), dir, Options{}, func(s string) { b.Log(s) })
		if err != nil {
			b.Fatal(err)
		}
		if out.Results.Valid != checker.Valid {
			b.Fatalf("verdict %s on a healthy history", out.Results.Valid)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "ops/s")
}
