package runner

import (
	"github.com/locktorture/locktorture/internal/owner"
	"github.com/locktorture/locktorture/internal/secret"

	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/clientprotocol"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/external"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/journal"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/scenarios"
	"github.com/locktorture/locktorture/workload"
)

// Run performs one run of sc and stores it. The returned error wraps
// ErrBadInput for bad settings; any other error is a harness failure. A
// run that completes returns its Outcome whatever the verdict — together
// with an error wrapping ErrReport when its report could not be drawn.
//
// It reads as Jepsen's run! does, one phase after another; every phase
// leaves what it started to cleanup, which runs on success, error and
// panic alike.
func Run(ctx context.Context, sc *scenarios.Scenario, opt Options) (*Outcome, error) {
	return runThen(ctx, sc, opt, laneHooks{})
}

// runThen is Run, telling a matrix lane (h) when the clients' time is up
// and when they stopped (see laneHooks).
func runThen(ctx context.Context, sc *scenarios.Scenario, opt Options, h laneHooks) (*Outcome, error) {
	r, err := prepare(ctx, sc, opt)
	if err != nil {
		return nil, err
	}
	defer r.cleanup()
	r.hooks = h
	return r.finish(ctx)
}

// prepare is a run's first half, everything before its clients: it
// validates the scenario, opens the run's store and starts its servers.
// A matrix lane calls it for its next cell while the cell before runs
// (servers started ahead, prestart.go). On an error (or a panic) what it
// started is already stopped; on success the caller owns the run and must
// call cleanup, after finish or instead of it.
func prepare(ctx context.Context, sc *scenarios.Scenario, opt Options) (*run, error) {
	r, err := validate(sc, opt)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			r.cleanup()
		}
	}()
	if why := refusal(ctx, sc); why != "" {
		return nil, fmt.Errorf("%w: %s", errRefused, why)
	}
	swept := sweep(ctx, opt.TempDir)
	if err := r.openStore(); err != nil {
		return nil, err
	}
	for _, s := range swept {
		r.lg.Printf("%s", s)
	}
	if err := r.startServers(ctx); err != nil {
		if ctx.Err() != nil && !errors.Is(err, ErrInterrupted) {
			err = fmt.Errorf("%w: %w", ErrInterrupted, err)
		}
		return nil, r.failedStart(err)
	}
	ok = true
	return r, nil
}

// finish is a prepared run's second half: its clients and faults, the
// check and the report. The run's time starts here (startClients), however
// long ago its servers came up.
func (r *run) finish(ctx context.Context) (*Outcome, error) {
	if err := r.startClients(ctx); err != nil {
		return nil, err
	}
	werr := r.runClients(ctx)
	if err := r.heal(ctx, werr); err != nil {
		return nil, err
	}
	results, err := r.check(ctx)
	if err != nil {
		return nil, err
	}
	return r.report(ctx, results)
}

// run is one run in progress: what each phase made, for the next.
type run struct {
	sc      *scenarios.Scenario
	opt     Options
	binfo   backends.Info
	factory backends.Factory
	sch     nemesis.Schedule

	dir     string
	lg      *log.Logger
	cl      *cluster.Cluster
	backend backends.Backend
	res     workload.Resource
	rec     *history.Recorder
	checked fileCheck    // what check found, for the report
	live    reports.Live // the verdict so far, for run.log
	procs   *workload.Procs
	engine  *nemesis.Engine
	servers *checker.ServerSource // where the servers came from
	// keepLogs keeps the store directory of a run whose server did not
	// start: run.log and the servers' logs say why.
	keepLogs bool
	// serversFile names an external run's servers (servers: external).
	serversFile *cluster.ServersFile
	// launcher runs the clients as processes (nil: in-process).
	launcher *clientprotocol.Launcher
	// hooks tell a matrix lane when the clients' time is up (it starts
	// its next cell's servers then, prestart.go) and when the clients
	// stopped (it starts its next cell then, lanes.go).
	hooks laneHooks

	// started is set once clients run: from then on the store keeps the
	// run (and its history) whatever happens.
	started bool
	closers []func() // run last first by cleanup
}

// validate checks the scenario and finds its backend; nothing is started.
func validate(sc *scenarios.Scenario, opt Options) (*run, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	binfo, factory, err := backends.Lookup(sc.Backend)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	if opt.Store == "" {
		opt.Store = "store"
	}
	r := &run{sc: sc, opt: opt, binfo: binfo, factory: factory}
	if err := r.loadServersFile(); err != nil {
		return nil, err
	}
	if len(sc.Uncontrolled) > 0 {
		// Faults the servers file gives no control for are refused now.
		if err := sc.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
		}
	}
	r.sch = sc.NemesisSchedule()
	return r, nil
}

// deferClose adds f to what cleanup runs.
func (r *run) deferClose(f func()) { r.closers = append(r.closers, f) }

// cleanup stops and closes everything, last started first; until clients
// have run, it also removes the run's store directory, so a failure (or a
// panic) leaves nothing half-written behind.
func (r *run) cleanup() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
	if r.dir != "" && !r.started && !r.keepLogs {
		_ = os.RemoveAll(r.dir)
		// And the scenario's and backend's directories when the failed
		// run made them (os.Remove leaves a directory that holds runs).
		backendDir := filepath.Dir(r.dir)
		_ = os.Remove(backendDir)
		_ = os.Remove(filepath.Dir(backendDir))
	}
}

// openStore makes the run's store directory with its effective
// scenario.yaml and run.log.
func (r *run) openStore() error {
	dir, err := newRunDir(r.opt.Store, r.sc.Name, r.sc.Backend)
	if err != nil {
		return err
	}
	r.dir = dir
	eff, err := r.sc.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(secret.Redact(string(eff))), 0o644); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	logf, err := os.Create(filepath.Join(dir, "run.log"))
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	r.deferClose(func() { _ = logf.Close() })
	var lw io.Writer = logf
	if r.opt.Log != nil {
		lw = io.MultiWriter(logf, r.opt.Log)
	}
	// One log line per Write: a secret is masked whole.
	lw = secret.Writer(lw)
	r.lg = log.New(lw, "", log.Ltime|log.Lmicroseconds)
	r.lg.Printf("run %s: scenario %s, backend %s, seed %d", dir, r.sc.Name, r.sc.Backend, r.sc.Seed)
	return nil
}

// sweep undoes and removes, before anything else, what earlier harnesses
// killed before they could clean up left on this machine, whatever this
// run's mode: their journals' undos on servers they did not own (a paused
// container, a replica's masterauth, a namespace of keys), processes their
// clients started, temporary directories, containers and networks. It
// returns what it did, in words, for run.log.
func sweep(ctx context.Context, tempDir string) []string {
	var out []string
	undone, errs := journal.ReplayDead(ctx, journal.Dir(), owner.Alive)
	for _, u := range undone {
		out = append(out, "undid, for a harness that died: "+u)
	}
	for _, err := range errs {
		out = append(out, fmt.Sprintf("could not undo what a harness that died left: %v (tried again by the next run)", err))
	}
	for _, p := range clientprotocol.ReapOrphans() {
		out = append(out, fmt.Sprintf("ended %s, left by a client of a harness that is gone", p))
	}
	for _, s := range cluster.SweepLeftovers(ctx, tempDir) {
		out = append(out, "removed "+s+", left by a harness that is gone")
	}
	return out
}

// startServers starts the cluster, the backend (which starts the servers
// it needs) and the protected resource.
func (r *run) startServers(ctx context.Context) error {
	var cl *cluster.Cluster
	var err error
	if r.sc.Servers == cluster.ServersExternal {
		cl, err = r.externalCluster(ctx)
	} else {
		cl, err = cluster.New(cluster.Options{LogDir: r.dir, TempDir: r.opt.TempDir, Servers: r.sc.Servers, Images: r.sc.Images, RedisProgram: r.sc.RedisProgram,
			TLS: r.sc.Security == scenarios.SecurityTLS, Locked: true})
	}
	if err != nil {
		return err
	}
	r.cl = cl
	r.deferClose(func() {
		if cerr := cl.Close(); cerr != nil {
			r.lg.Printf("stopping servers: %v", cerr)
		}
		r.lg.Printf("servers stopped")
	})
	if nemesis.UsesLinks(r.sch.Script, r.sch.Random) {
		// Every client's traffic to every server gets a link of its own,
		// so faults can cut or slow one (client, server) pair.
		cl.EnableLinks()
	}
	backend, err := r.factory(ctx, r.sc.BackendEnv(cl))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrInterrupted, err)
		}
		return fmt.Errorf("backend %s: %w", r.sc.Backend, err)
	}
	r.backend = backend
	r.deferClose(func() { _ = backend.Close() })
	for _, l := range cl.Logs() {
		r.lg.Printf("server up, log %s", filepath.Base(l))
	}
	sc := r.sc
	res, err := workload.NewResource(ctx, sc.Resource, workload.ResourceEnv{Cluster: cl, Fencing: sc.Fencing, Keys: sc.KeyNames(), Backend: sc.Backend, Postgres: postgres.RunOptions(sc.StartOptions())})
	if err != nil {
		return fmt.Errorf("resource %s: %w", sc.Resource, err)
	}
	r.res = res
	r.deferClose(func() { _ = res.Close() })
	// Someone else's server that goes away mid-run fails the run as one of
	// ours that exits does (Died); ours are watched by their processes.
	r.deferClose(external.Watch(cl, 500*time.Millisecond))
	r.recordServers(ctx)
	return nil
}

// historyPath is where the run's history is recorded.
func (r *run) historyPath() string { return filepath.Join(r.dir, "history.jsonl") }

// startClients opens the history, makes the client processes, and plans
// and checks the faults (a fault that cannot happen is refused here).
func (r *run) startClients(ctx context.Context) error {
	hf, err := os.Create(r.historyPath())
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	r.deferClose(func() { _ = hf.Close() })
	// The nemesis watches every op, on the recording goroutine, so it can
	// act on a client's event before that client's next step.
	observe := func(op history.Op) {
		r.live.Observe(&op)
		if r.engine != nil {
			r.engine.Observe(op)
		}
		if r.opt.Observe != nil {
			r.opt.Observe(op)
		}
	}
	r.rec = history.NewRecorder(hf, history.RecorderOptions{Observe: observe})
	r.live.OpsFrom(r.rec.Len)
	r.deferClose(func() { _ = r.rec.Close() })
	r.procs = workload.NewProcs(r.sc.Clients, r.rec)
	nenv := &nemesis.Env{Gates: r.procs.Gates, Clocks: r.procs.Clocks, Cluster: r.cl}
	steps := append([]nemesis.Step(nil), r.sch.Script...)
	if r.sch.Random != nil {
		planned, err := nemesis.Plan(*r.sch.Random, r.sc.Seed, r.sc.Duration.D(), nenv)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		steps = append(steps, planned...)
	}
	for _, s := range steps {
		r.lg.Printf("nemesis plan: %s", s)
	}
	if err := nemesis.CheckSteps(nenv, steps, r.sc.Duration.D()); err != nil {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	if err := r.launchClients(ctx, steps); err != nil {
		return err
	}
	// The lock clients are made (and connected) before the first fault, and
	// the run's time starts once they are: a step at 0 strikes clients that
	// are ready, not their handshakes.
	if err := r.procs.Open(ctx, r.backend); err != nil {
		return err
	}
	r.deferClose(r.procs.Close)
	r.rec.StartNow()
	r.engine = nemesis.NewEngine(ctx, nenv, r.rec, steps)
	return nil
}

// runClients runs the clients and the nemesis for the scenario's duration
// (or until ctx ends), then heals every fault and waits for the clients.
// It returns the client loop's error.
func (r *run) runClients(ctx context.Context) error {
	sc := r.sc
	wcfg := workload.Config{
		Clients: sc.Clients, Keys: sc.KeyNames(), Hold: sc.Hold.D(),
		ThinkMin: sc.ThinkMin.D(), ThinkMax: sc.ThinkMax.D(), OpTimeout: sc.Timeout.D(), Seed: sc.Seed,
		ReleaseRetry: sc.ReleaseRetry.D(), EntryWait: sc.EntryWait.D(),
	}
	stop := make(chan struct{})
	r.started = true
	r.engine.FireDue()
	r.lg.Printf("clients start: %d clients on %d keys for %s", sc.Clients, sc.Keys, sc.Duration)
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() { werr = workload.Run(ctx, stop, wcfg, r.backend, r.res, r.procs) })
	wg.Go(func() { r.engine.Run(ctx, stop) })
	wg.Go(func() { r.logLive(stop) })
	r.waitRunTime(ctx)
	close(stop)
	if r.hooks.clientsDone != nil {
		r.hooks.clientsDone()
	}
	if herr := r.engine.Heal(context.WithoutCancel(ctx)); herr != nil {
		r.lg.Printf("nemesis: %v", herr)
	}
	for _, m := range r.cl.LinkRemarks() {
		r.lg.Printf("links: %s", m)
	}
	for _, g := range r.procs.Gates { // nothing stays frozen, whatever the nemesis did
		g.Resume()
	}
	wg.Wait()
	r.closeClients()
	r.lg.Printf("clients stopped; faults healed")
	if r.hooks.clientsStopped != nil {
		r.hooks.clientsStopped()
	}
	return r.clientError(werr)
}

// waitRunTime waits out the clients' time (or until ctx ends, or the
// clients fail): the scenario's duration, plus the time the faults took to
// heal. A kill's restart waits until its server serves again (seconds for
// a ZooKeeper JVM on a loaded machine): the clients keep the time after it
// that the scenario planned, instead of stopping before the restarted
// server ever answered them. run.log says by how much the run grew.
func (r *run) waitRunTime(ctx context.Context) {
	begun := time.Now()
	t := time.NewTimer(r.sc.Duration.D())
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		case <-r.clientsFailed():
			return
		}
		heal := r.engine.HealTime()
		left := r.sc.Duration.D() + heal - time.Since(begun)
		if left <= 0 {
			if heal >= time.Millisecond {
				r.lg.Printf("clients ran %s past the scenario's %s: the time the faults took to heal", heal.Round(time.Millisecond), r.sc.Duration)
			}
			return
		}
		// A heal under way grows the time left as it goes: look again at
		// least every few milliseconds rather than spin.
		t.Reset(max(left, 5*time.Millisecond))
	}
}

// liveEvery is how often run.log gets the verdict so far (a variable for tests).
var liveEvery = time.Minute

// logLive writes the verdict so far (see reports.Live) to run.log every
// liveEvery until stop, and once more then: a nightly soak's log shows
// when it first went red.
func (r *run) logLive(stop <-chan struct{}) {
	t := time.NewTicker(liveEvery)
	defer t.Stop()
	line := func() string {
		return r.live.Counts(time.Now()).Line(r.sc.Duration.D()+r.engine.HealTime(), !r.binfo.LockFree)
	}
	for {
		select {
		case <-t.C:
			r.lg.Printf("so far: %s", line())
		case <-stop:
			r.lg.Printf("clients done: %s", line())
			return
		}
	}
}

// interrupted is the error of a run stopped by a signal after its clients
// ran: never a verdict on a half-read or half-checked history.
func (r *run) interrupted() error {
	return fmt.Errorf("%w: the history so far is in %s (check it with: locktorture analyze %s)", ErrInterrupted, r.dir, r.dir)
}

// heal makes sure the run tested what it meant to (no interrupt, no
// client error, no server that died on its own), reads every key once
// more, and closes the history.
func (r *run) heal(ctx context.Context, werr error) error {
	if ctx.Err() != nil {
		_ = r.rec.Close()
		return r.interrupted()
	}
	if werr != nil {
		return fmt.Errorf("runner: %w", werr)
	}
	if died := r.cl.Died(); len(died) > 0 {
		_ = r.rec.Close()
		return fmt.Errorf("%w: %s; the run did not test what it meant to (its history is in %s)", errServerDied, strings.Join(died, "; "), r.dir)
	}
	if err := workload.FinalReads(ctx, r.sc.KeyNames(), r.res, r.rec); err != nil {
		_ = r.rec.Close()
		if ctx.Err() != nil {
			return r.interrupted()
		}
		return fmt.Errorf("runner: final reads: %w", err)
	}
	if err := r.rec.Close(); err != nil {
		return fmt.Errorf("runner: history: %w", err)
	}
	return nil
}

// check runs the checkers that apply to the backend and notes what the
// results should say besides: checkers that did not apply, scripted faults
// that never happened.
func (r *run) check(ctx context.Context) (*checker.Results, error) {
	sc := r.sc
	r.lg.Printf("history: %d ops; checking", r.rec.Len())
	names, skipped := applicable(sc.Checkers, r.binfo)
	began := time.Now()
	ex := newExerciseTally(r.engine.Windows(len(r.sch.Script)), sc.TTL.D())
	fc, err := checkFile(ctx, r.historyPath(), names, r.opt, ex)
	results := fc.res
	r.checked = fc
	r.lg.Printf("checked in %s", time.Since(began).Round(time.Millisecond))
	if ctx.Err() != nil {
		return nil, r.interrupted()
	}
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		noteSkipped(results, sc.Backend, skipped)
	}
	noteMissed(results, r.engine.Missed(len(r.sch.Script)))
	noteIdle(results, r.engine.Idle(len(r.sch.Script)))
	noteUnexercised(results, ex.problems())
	noteClientWarnings(results, r.clientWarnings())
	if r.cl != nil {
		noteLinkRemarks(results, r.cl.LinkRemarks())
	}
	results.Scenario, results.Backend, results.Resource, results.Seed = sc.Name, sc.Backend, sc.Resource, sc.Seed
	if sc.Backend == scenarios.ExecBackend {
		results.Program = sc.Exec.Program()
	}
	results.Servers = r.servers
	results.Library = libraryOf(sc.Backend)
	return results, nil
}

// report writes results.json and the report, and points store/latest at
// the run.
func (r *run) report(ctx context.Context, results *checker.Results) (*Outcome, error) {
	sc := r.sc
	out := &Outcome{Results: results, Dir: r.dir, Expected: sc.Expected(sc.Backend)}
	out.Summary = reports.Summary(results, 3)
	if err := reports.WriteResults(filepath.Join(r.dir, "results.json"), results); err != nil {
		return nil, err
	}
	var logs []string
	for _, l := range r.cl.Logs() {
		logs = append(logs, filepath.Base(l))
	}
	logs = append(logs, r.clientLogs()...)
	info := reports.RunInfo{
		Scenario: sc.Name, Description: strings.TrimSpace(sc.Description), Backend: sc.Backend, Resource: sc.Resource,
		Fencing: sc.Fencing, Seed: sc.Seed, Clients: sc.Clients, Keys: sc.Keys, Command: r.opt.Command,
		Expected: out.Expected.Valid, ExpectedCheckers: out.Expected.Checkers, Summary: out.Summary, Settings: settings(sc), Logs: logs,
		Servers: r.servers,
	}
	var rerr error
	began := time.Now()
	ops, long, err := reportOps(ctx, r.historyPath(), results, r.checked)
	r.checked = fileCheck{}
	long.apply(&info)
	if err == nil {
		err = reports.WriteRun(ctx, r.dir, ops, results, info)
		r.lg.Printf("report drawn in %s", time.Since(began).Round(time.Millisecond))
	}
	if err != nil {
		r.lg.Printf("report: %v", err)
		rerr = fmt.Errorf("%w: %w", ErrReport, err)
	}
	if ctx.Err() != nil {
		return nil, r.interrupted()
	}
	r.lg.Printf("verdict: %s", results.Valid)
	if results.Note != "" {
		r.lg.Printf("note: %s", results.Note)
	}
	if err := linkLatest(r.opt.Store, r.dir); err != nil {
		r.lg.Printf("store/latest: %v", err)
	}
	return out, rerr
}
