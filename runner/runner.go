// Package runner wires one run together: scenario -> cluster -> backend and
// workload -> client loops and nemesis -> history -> checkers -> results and
// reports in the store. Analyze re-checks a stored history with no servers,
// the way Jepsen separates running a test from analysing it.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/scenarios"
	"gopkg.in/yaml.v3"
)

// Sentinel errors of this package.
var (
	// ErrBadInput is wrapped when the scenario or arguments are wrong (exit 254).
	ErrBadInput = errors.New("bad input")
	// ErrInterrupted is wrapped when the run was stopped by a signal.
	ErrInterrupted = errors.New("interrupted")
	// errServerDied is wrapped when a server exited mid-run with no fault
	// asking it to (a crash, a SHUTDOWN from outside): a harness failure.
	errServerDied = errors.New("a server died mid-run")
	// ErrReport is wrapped when the report could not be drawn: the verdict
	// and results.json stand, but the harness failed (exit 255).
	ErrReport = errors.New("report")
)

// Options are the run's settings outside the scenario.
type Options struct {
	// Store is the store's root directory ("store").
	Store string
	// Command is the command line that repeats the run, for the report.
	Command string
	// Log receives progress lines (besides run.log); nil for none.
	Log io.Writer
	// LinearizableTimeout bounds porcupine (zero: 30s).
	LinearizableTimeout time.Duration
	// Checkers, for Analyze, replaces the checkers the stored scenario.yaml
	// asks for (none given: the scenario's, or every checker without one).
	Checkers []string
	// TempDir holds the servers' data directories (default: the system's).
	TempDir string
	// ClientCommand runs a built-in backend's client process (client_mode
	// process); empty: this program's own `client` subcommand.
	ClientCommand []string
	// Observe, when set, sees every op as it is recorded (on the
	// recording goroutine: it must be quick), for progress displays.
	Observe func(history.Op)
}

// Outcome is what a run or an analysis produced.
type Outcome struct {
	// Results is results.json.
	Results *checker.Results
	// Dir is the run's store directory.
	Dir string
	// Expected is the scenario's expectation for this backend (may be empty).
	Expected scenarios.Expectation
	// Summary is the one-screen text for the terminal.
	Summary string
}

// noteSkipped says in the results which checkers did not apply.
func noteSkipped(r *checker.Results, backend string, skipped []string) {
	r.Note = strings.TrimPrefix(r.Note+"; "+backend+" takes no lock, so "+strings.Join(skipped, " and ")+" did not apply", "; ")
}

// noteLinkRemarks says in the results what the harness did to the
// links beyond the faults (cluster.Cluster.LinkRemarks): connections
// broken because a heal could not otherwise end. The verdict stands; the
// clients of those connections saw a reset the scenario did not plan.
func noteLinkRemarks(r *checker.Results, remarks []string) {
	if len(remarks) == 0 {
		return
	}
	r.Note = strings.TrimPrefix(r.Note+"; the harness reset connections to end a heal: "+strings.Join(remarks, "; "), "; ")
}

// noteMissed says which scripted faults never happened. A run whose
// scenario planned a fault that did not happen did not test what it says:
// it is unknown, never valid.
func noteMissed(r *checker.Results, missed []nemesis.Step) {
	if len(missed) == 0 {
		return
	}
	var what []string
	for _, s := range missed {
		what = append(what, s.String())
	}
	r.Note = strings.TrimPrefix(r.Note+"; planned fault(s) that never happened: "+strings.Join(what, "; "), "; ")
	if r.Valid == checker.Valid {
		r.Valid = checker.Unknown
	}
}

// noteIdle says which scripted faults struck but did nothing (a session
// kill that found no session): like a fault that never happened, the run
// did not test it, so a valid verdict becomes unknown.
func noteIdle(r *checker.Results, idle []string) {
	if len(idle) == 0 {
		return
	}
	r.Note = strings.TrimPrefix(r.Note+"; planned fault(s) that did nothing: "+strings.Join(idle, "; "), "; ")
	if r.Valid == checker.Valid {
		r.Valid = checker.Unknown
	}
}

// applicable drops the lock checkers for a lock-free comparator, whose
// "holds" overlap by design.
func applicable(names []string, b backends.Info) (run, skipped []string) {
	if !b.LockFree {
		return names, nil
	}
	for _, n := range names {
		if n == checker.NameMutex || n == checker.NameLinearizable {
			skipped = append(skipped, n)
		} else {
			run = append(run, n)
		}
	}
	return run, skipped
}

// settings is the report's settings table, drawn from the effective
// scenario.yaml (what the run stored to repeat itself), so that it cannot
// leave a setting out: every top-level field but the name, description,
// the backends list and the expectations (shown elsewhere in the report).
func settings(sc *scenarios.Scenario) map[string]string {
	out := map[string]string{}
	b, err := sc.Marshal()
	if err != nil {
		return out
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return out
	}
	m := doc.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		k, v := m[i].Value, m[i+1]
		switch k {
		case "name", "description", "backends", "expect":
			continue
		case "backend_options":
			// The run's backend's own settings, as rows of their own.
			for j := 0; j+1 < len(v.Content); j += 2 {
				if v.Content[j].Value != sc.Backend {
					continue
				}
				o := v.Content[j+1].Content
				for l := 0; l+1 < len(o); l += 2 {
					setFlow(o[l+1])
					if fb, err := yaml.Marshal(o[l+1]); err == nil {
						out[o[l].Value] = strings.TrimSpace(string(fb))
					}
				}
			}
			continue
		}
		if v.Kind == yaml.ScalarNode {
			out[k] = v.Value
			continue
		}
		setFlow(v)
		if fb, err := yaml.Marshal(v); err == nil {
			out[k] = strings.TrimSpace(string(fb))
		}
	}
	return out
}

// setFlow makes a YAML node print on one line.
func setFlow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	for _, c := range n.Content {
		setFlow(c)
	}
}

// check runs the checkers and refuses to call a run valid when it checked
// nothing: with no lock ever granted the verdict is unknown.
func check(ctx context.Context, ops []history.Op, names []string, opt Options) (*checker.Results, error) {
	cs, err := checker.Check(ctx, ops, names, checker.Options{LinearizableTimeout: opt.LinearizableTimeout})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	r := &checker.Results{Checkers: cs, Ops: len(ops)}
	r.AddWarnings(history.Lint(ops))
	var failures failureTally
	for i := range ops {
		failures.add(&ops[i])
	}
	r = judge(r, checkedSomething(ops), hasFinalReads(ops))
	noteFailures(r, &failures)
	return r, nil
}

// judge sets the verdict of checked results: unknown when the history
// gave the checkers nothing to judge, or no final reads for lost-update.
func judge(r *checker.Results, checked, finalReads bool) *checker.Results {
	cs := r.Checkers
	r.Valid = cs.Verdict()
	switch {
	case r.Valid == checker.Invalid:
	case !checked:
		r.Valid = checker.Unknown
		r.Note = "no lock was granted and no write accepted: nothing was checked"
	case cs.LostUpdate != nil && cs.LostUpdate.AcceptedWrites > 0 && !finalReads:
		// lost-update says unknown itself; the note says why for the run.
		r.Valid = checker.Unknown
		r.Note = "the history has no final reads (it ends before the run did: a killed harness?), so lost-update cannot tell whether an increment was lost"
	}
	r.NoteCapped()
	return r
}

// hasFinalReads reports whether the history read the keys at the end.
func hasFinalReads(ops []history.Op) bool {
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].F == history.FinalRead {
			return true
		}
	}
	return false
}

// checkedSomething reports whether the history gave the checkers anything
// to judge: a granted lock or an accepted write.
func checkedSomething(ops []history.Op) bool {
	for i := range ops {
		if ops[i].Type == history.OK && (ops[i].F == history.Acquire || ops[i].F == history.Write) {
			return true
		}
	}
	return false
}

// newRunDir makes store/<scenario>/<backend>/<YYYYMMDDTHHMMSS>/, adding a
// suffix when a run in the same second took the name.
func newRunDir(store, scenario, backend string) (string, error) {
	if st, err := os.Stat(store); err == nil && !st.IsDir() {
		return "", fmt.Errorf("%w: --store %s is a file, not a directory", ErrBadInput, store)
	}
	base := filepath.Join(store, scenario, backend, time.Now().Format("20060102T150405"))
	dir := base
	for i := 1; ; i++ {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return "", fmt.Errorf("runner: store: %w", err)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return "", fmt.Errorf("runner: store: %w", err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// linkLatest points store/latest at dir.
func linkLatest(store, dir string) error {
	rel, err := filepath.Rel(store, dir)
	if err != nil {
		return err
	}
	link := filepath.Join(store, "latest")
	tmp := fmt.Sprintf("%s.tmp-%d-%d", link, os.Getpid(), time.Now().UnixNano()) // one per call: side-by-side cells may link at once
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}
