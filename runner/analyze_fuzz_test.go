package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzAnalyze drives analyze's whole path — read, contract checks, every
// checker, results.json and every report file — over mutated histories. It
// fails on any panic (Analyze turns one into an ErrReport error) and on an
// error that is neither bad input nor a report failure. The seeds are the
// golden histories and a few broken ones; `go test` runs just those.
func FuzzAnalyze(f *testing.F) {
	for _, dir := range []string{"../checker/testdata", "../history/testdata"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(doubleGrant))
	f.Add([]byte(doubleGrant + `{"index":4,"time":500,"process":1,"type":"OK","f":"release","key":"k0"}` + "\n"))
	f.Add([]byte(doubleGrant + `{"index":4,"time":500,"process":-7,"type":"invoke","f":"release","key":"k0"}` + "\n"))
	f.Add([]byte(`{"index":0,"time":1,"process":-1,"type":"info","f":"start-pause","value":{"process":0,"ms":2500}}` + "\n" +
		`{"index":1,"time":2,"process":-1,"type":"info","f":"stop-pause","value":{"process":0}}` + "\n"))
	f.Add([]byte(`{"index":0,"time":5,"process":0,"type":"invoke","f":"write","key":"k0","value":1,"fence":3,"tx":true}` + "\n" +
		`{"index":1,"time":9,"process":0,"type":"ok","f":"write","key":"k0","value":1,"fence":3,"tx":true}` + "\n" +
		`{"index":2,"time":12,"process":0,"type":"ok","f":"final-read","key":"k0","value":-3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := Analyze(ctx, dir, Options{LinearizableTimeout: time.Second}, func(string) {})
		switch {
		case err == nil:
			if out == nil || out.Results == nil {
				t.Fatal("no outcome and no error")
			}
		case errors.Is(err, ErrBadInput):
		default:
			t.Fatalf("analyze failed: %v", err)
		}
	})
}
