package cluster

import "context"

// program is what every server of the cluster has, whatever its kind and
// wherever it runs: a name, the address clients dial, and the unit that
// runs it (for a server someone else runs, a unit that can at most be
// controlled through docker). The kinds' types embed it.
type program struct {
	p     Unit
	kind  string // the name of its Kind
	name  string
	host  string
	port  int    // the port clients dial
	given string // the address of a server someone else runs (given.go)
}

// Name is the server's name in logs and nemesis targets ("redis-0").
func (s *program) Name() string { return s.name }

// Kind is the name of the server's kind ("redis").
func (s *program) Kind() string { return s.kind }

// Addr is the address clients dial, host:port.
func (s *program) Addr() string { return hostPort(s.given, s.host, s.port) }

// Port is the port clients dial.
func (s *program) Port() int { return s.port }

// LogPath is the server's log file.
func (s *program) LogPath() string { return s.p.LogPath() }

// Stop ends the server for good (a server someone else runs is left as
// the run found it).
func (s *program) Stop(ctx context.Context) error { return s.p.Stop(ctx) }

// faultable is a program that server faults act on: it pauses, dies and
// comes back. ready says whether it serves again after a restart.
type faultable struct {
	program
	ready func(context.Context) error
}

// PID is the server's process id, or 0 when it is not running (or not a
// local process).
func (s *faultable) PID() int { return unitPID(s.p) }

// Running reports whether the server is up.
func (s *faultable) Running() bool { return s.p.Running() }

// Pause freezes the server (SIGSTOP to every process of it; in a
// container, docker pause), as a stalled machine would be.
func (s *faultable) Pause(ctx context.Context) error { return s.p.Pause(ctx) }

// Resume thaws a paused server.
func (s *faultable) Resume(ctx context.Context) error { return s.p.Resume(ctx) }

// Kill ends the server with SIGKILL, as a crash would, and returns once
// no process of it is left.
func (s *faultable) Kill(ctx context.Context) error { return s.p.Kill(ctx) }

// Restart starts a killed or stopped server again on the same address
// with the same files, and waits until it serves (a member of an
// ensemble needs a quorum up). What it keeps is its kind's: see the kind's
// type.
func (s *faultable) Restart(ctx context.Context) error {
	return restartUnit(ctx, s.name, s.p, s.ready)
}
