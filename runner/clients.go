package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/clientprotocol"
	"github.com/locktorture/locktorture/clients"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/scenarios"
)

// The client launchers: in-process (the default: the backend's clients
// are goroutines of the harness) and process (clientprotocol: one process per
// client speaking the client protocol). The runner picks one here, once;
// nemeses and backends never ask which runs.

// launchClients starts the clients as processes when the run asks for
// them (client_mode process, or the exec backend): after the faults are
// planned, so that a fault a child cannot serve is refused before the run.
func (r *run) launchClients(ctx context.Context, steps []nemesis.Step) error {
	sc := r.sc
	if !sc.ProcessClients() {
		return nil
	}
	opt := clientprotocol.Options{Cluster: r.cl, Dir: r.dir, TTL: sc.TTL.D(), Timeout: sc.Timeout.D(), BackendOptions: sc.Options(sc.Backend), Logf: r.lg.Printf}
	if sc.Backend == scenarios.ExecBackend {
		cmd, err := clients.Resolve(sc.Exec.Command, r.dir)
		if err != nil {
			return err
		}
		opt.Command, opt.Env = cmd, sc.Exec.Env
	} else if p, ok := backends.ProgramOf(sc.Backend); ok {
		// A program row: the library's shipped adapter.
		cmd, err := clients.Resolve(p.Command, r.dir)
		if err != nil {
			return err
		}
		opt.Command = cmd
	} else {
		opt.Command = r.opt.ClientCommand
		if len(opt.Command) == 0 {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("runner: the harness's own program, to run clients: %w", err)
			}
			opt.Command = []string{self, "client"}
		}
		cfg, err := clientprotocol.ChildConfigOf(sc.Backend, sc.BackendEnv(r.cl))
		if err != nil {
			return err
		}
		opt.Builtin = cfg
	}
	l := clientprotocol.New(opt)
	r.launcher = l
	r.deferClose(func() { _ = l.Close() })
	start := time.Now()
	err := l.Start(ctx, clientprotocol.Procs{Gates: r.procs.Gates, Clocks: r.procs.Clocks, History: r.procs.History})
	switch {
	case err == nil:
	case errors.Is(err, clientprotocol.ErrCommand):
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ErrInterrupted, err)
	default:
		r.started = true // keep the store: the error names the client's log there
		return err
	}
	r.lg.Printf("clients: %d processes (%s) open in %s", sc.Clients, opt.Command[0], time.Since(start).Round(time.Millisecond))
	if p := clientClockStep(steps); p != nil && !l.Has(clientprotocol.AbilityClock) {
		return fmt.Errorf("%w: %s moves a client's clock, but the client program did not announce the %q ability in its open reply", errNotServed, p, clientprotocol.AbilityClock)
	}
	if backends.IsUserProgram(sc.Backend) && sc.Suits != nil && slices.Contains(sc.Suits.Needs, "renews") && !l.Has(clientprotocol.AbilityExtend) {
		return fmt.Errorf("%w: scenario %s tests a lock that renews itself, but the client program did not announce the %q ability in its open reply (it renews nothing the harness can see)", errNotServed, sc.Name, clientprotocol.AbilityExtend)
	}
	r.backend = l
	return nil
}

// errNotServed is wrapped (with ErrBadInput) when the client program
// cannot serve what the scenario asks of it (a step on a client's clock
// and no clock ability announced): a comparison's row of the user's
// (compare --exec) is then not run, with the reason.
var errNotServed = fmt.Errorf("%w: the client program cannot serve the scenario", ErrBadInput)

// clientClockStep is the first step that jumps or skews a client's clock.
func clientClockStep(steps []nemesis.Step) *nemesis.Step {
	for i, s := range steps {
		if s.Fault != "clock" {
			continue
		}
		if p, ok := s.Params.(*nemesis.ClockParams); ok && len(p.ClientSet.List()) > 0 {
			return &steps[i]
		}
	}
	return nil
}

// clientsFailed is closed when a client process failed the harness.
func (r *run) clientsFailed() <-chan struct{} {
	if r.launcher == nil {
		return nil
	}
	return r.launcher.Failed()
}

// clientError is a client process's failure, which outranks the client
// loop's own error (it is what caused it).
func (r *run) clientError(werr error) error {
	if r.launcher != nil {
		if err := r.launcher.Err(); err != nil {
			return err
		}
	}
	return werr
}

// clientLogs are the client processes' logs, for the report.
func (r *run) clientLogs() []string {
	if r.launcher == nil {
		return nil
	}
	var out []string
	for _, l := range r.launcher.Logs() {
		out = append(out, filepath.Base(l))
	}
	return slices.Clip(out)
}

// closeClients ends the client processes once the clients have stopped
// (a bounded wait), so that what they left behind is known before the
// verdict; it logs each warning.
func (r *run) closeClients() {
	if r.launcher == nil {
		return
	}
	_ = r.launcher.Close()
	for _, w := range r.launcher.Warnings() {
		r.lg.Printf("warning: %s", w)
	}
}

// clientWarnings are the client processes' warnings (processes left
// behind, cut logs).
func (r *run) clientWarnings() []string {
	if r.launcher == nil {
		return nil
	}
	return r.launcher.Warnings()
}

// noteClientWarnings lists the client processes' warnings in the results
// (warnings) and says them in the note, so the report shows them.
func noteClientWarnings(res *checker.Results, ws []string) {
	for _, w := range ws {
		res.Warnings = append(res.Warnings, w)
		res.WarningCount++
		res.Note = strings.TrimPrefix(res.Note+"; "+w, "; ")
	}
}
