// Package reports turns a run's history and checker results into what
// people read: PNG plots (gonum/plot), a self-contained index.html, a JUnit
// XML file for CI, porcupine's linearizability view, the one-screen text
// summary the CLI prints, and results.json itself.
//
// Of ours it imports history, checker, matrix (a matrix's data) and
// scenarios (the families a comparison groups by), besides internal
// helpers; it starts no server, so a stored run can be re-reported anywhere.
package reports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// Names of the files a run directory holds; WriteRun writes the report
// files, the runner the others.
const (
	FileHistory         = "history.jsonl"
	FileResults         = "results.json"
	FileScenario        = "scenario.yaml"
	FileRunLog          = "run.log"
	FileIndex           = "index.html"
	FileTimeline        = "timeline.png"
	FileLatency         = "latency.png"
	FileRate            = "rate.png"
	FileLinearizability = "linearizability.html"
	FileJUnit           = "junit.xml"
	// FileRunInfo holds the RunInfo the report was drawn with, so that
	// the report can be drawn again from the store alone.
	FileRunInfo = "run.json"
)

// RunInfo describes a run beyond what results.json holds: what the report
// shows about the scenario, its settings and how to repeat it.
type RunInfo struct {
	// Scenario is the scenario's name; Description says what it does.
	Scenario    string `json:"scenario,omitempty"`
	Description string `json:"description,omitempty"`
	// Backend, Resource and Fencing name the lock under test, the protected
	// resource and the fencing mode (none, writes, all).
	Backend  string `json:"backend,omitempty"`
	Resource string `json:"resource,omitempty"`
	Fencing  string `json:"fencing,omitempty"`
	// Seed is the run's seed.
	Seed int64 `json:"seed,omitempty"`
	// Clients and Keys are the number of client processes and lock keys.
	Clients int `json:"clients,omitempty"`
	Keys    int `json:"keys,omitempty"`
	// Command is the exact command line that repeats the run.
	Command string `json:"command,omitempty"`
	// Expected is the scenario's expected verdict (valid, invalid,
	// unknown), or empty when it states none.
	Expected string `json:"expected,omitempty"`
	// ExpectedCheckers are the scenario's expected verdicts per checker;
	// the report judges them as a matrix does.
	ExpectedCheckers map[string]string `json:"expected_checkers,omitempty"`
	// Summary is the plain-text summary the CLI printed (see Summary). It
	// is not saved in run.json: it follows from the results.
	Summary string `json:"-"`
	// Settings are the run's effective settings, shown as a table.
	Settings map[string]string `json:"settings,omitempty"`
	// Logs are the file names, relative to the run directory, of the
	// servers' logs.
	Logs []string `json:"logs,omitempty"`
	// Servers says where the servers came from: mode, images, versions.
	Servers *checker.ServerSource `json:"servers,omitempty"`
	// Excerpt, for a run too long to draw whole, says which stretch of
	// it the plots show; the checkers and their counts cover it all.
	Excerpt string `json:"-"`
	// Density, for such a run, counts all of it: WriteRun draws it as
	// density.png, and rate.png from it.
	Density *Density `json:"-"`
}

// heading names the run for titles: "scenario / backend — VERDICT".
func heading(res *checker.Results, info RunInfo) string {
	var parts []string
	if s := first(info.Scenario, res.Scenario); s != "" {
		parts = append(parts, s)
	}
	if b := first(info.Backend, res.Backend); b != "" {
		parts = append(parts, b)
	}
	h := strings.Join(parts, " / ")
	if h == "" {
		h = "run"
	}
	h += " — " + strings.ToUpper(res.Valid.String())
	if info.Excerpt != "" {
		h += " — " + info.Excerpt
	}
	return h
}

// WriteRun writes a run's report into dir (created if missing):
// timeline.png, latency.png, rate.png, linearizability.html, junit.xml,
// index.html and run.json (info, to draw the report again). Each file is written atomically. A file that cannot be made
// does not stop the others; the errors are joined, each naming its file.
// history.jsonl, results.json, scenario.yaml and run.log are the caller's
// to write; index.html links to them.
func WriteRun(ctx context.Context, dir string, ops []history.Op, res *checker.Results, info RunInfo) error {
	if res == nil {
		return errors.New("reports: no results")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	head := heading(res, info)
	w := &fileWriter{ctx: ctx, dir: dir}
	w.write(FileTimeline, func() ([]byte, error) { return timelinePNG(ops, res, head) })
	w.write(FileLatency, func() ([]byte, error) { return latencyPNG(ops, head) })
	if info.Density != nil {
		whole := heading(res, RunInfo{Scenario: info.Scenario, Backend: info.Backend})
		w.write(fileDensity, func() ([]byte, error) { return densityPNG(info.Density, whole) })
		w.write(FileRate, func() ([]byte, error) { return densityRatePNG(info.Density, whole) })
	} else {
		w.write(FileRate, func() ([]byte, error) { return ratePNG(ops, head) })
	}
	w.write(FileLinearizability, func() ([]byte, error) { return linearizabilityHTML(ctx, ops, head), nil })
	w.write(FileJUnit, func() ([]byte, error) { return junitXML(res, info) })
	w.write(FileIndex, func() ([]byte, error) { return indexHTML(ops, res, info) })
	w.write(FileRunInfo, func() ([]byte, error) { return marshalRunInfo(info) })
	return w.err()
}

func marshalRunInfo(info RunInfo) ([]byte, error) {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode run info: %w", err)
	}
	return append(b, '\n'), nil
}

// ReadRunInfo reads the run.json WriteRun left in dir. Its Summary is
// empty: callers make it from the results (Summary(res, 3), as the runner
// does).
func ReadRunInfo(dir string) (RunInfo, error) {
	var info RunInfo
	b, err := os.ReadFile(filepath.Join(dir, FileRunInfo))
	if err != nil {
		return info, fmt.Errorf("read run info: %w", err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", filepath.Join(dir, FileRunInfo), err)
	}
	return info, nil
}

// ErrDraw is wrapped by the error of a report file that panicked while it
// was drawn: a bug in the report, never in the verdict.
var ErrDraw = errors.New("reports: drawing failed")

// fileWriter renders a report's files into dir, side by side (each file is
// a pure function of the history and results), going on past a file that
// fails so that one bad plot does not cost the others.
type fileWriter struct {
	ctx  context.Context
	dir  string
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
	// slots bounds the files rendered at once to the processors Go runs
	// on: more would not finish sooner, and each plot holds its images
	// (a megabyte to ten) while it is drawn.
	slots chan struct{}
}

// write renders one file on its own goroutine and writes it atomically,
// unless the context is done. err waits for every file.
func (w *fileWriter) write(name string, render func() ([]byte, error)) {
	if w.slots == nil {
		w.slots = make(chan struct{}, runtime.GOMAXPROCS(0))
	}
	w.wg.Go(func() {
		w.slots <- struct{}{}
		defer func() { <-w.slots }()
		if err := w.ctx.Err(); err != nil {
			w.fail(fmt.Errorf("%s: %w", name, err))
			return
		}
		b, err := renderSafe(render)
		if err != nil {
			w.fail(fmt.Errorf("%s: %w", name, err))
			return
		}
		if err := writeFileAtomic(filepath.Join(w.dir, name), b); err != nil {
			w.fail(err)
		}
	})
}

// fail records one file's error.
func (w *fileWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

// renderSafe calls render and turns a panic into an error, so a report that
// fails to draw never takes the verdict down with it (as Jepsen's check-safe
// does for checkers).
func renderSafe(render func() ([]byte, error)) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%w: %v", ErrDraw, r)
		}
	}()
	return render()
}

// err waits for every file, then joins every failure (sorted, so the
// message does not depend on which file finished first), or is nil.
func (w *fileWriter) err() error {
	w.wg.Wait()
	slices.SortFunc(w.errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	if len(w.errs) == 0 {
		return nil
	}
	return fmt.Errorf("reports: %w", errors.Join(w.errs...))
}
