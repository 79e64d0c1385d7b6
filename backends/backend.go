// Package backends holds the lock implementations under test, one file
// each, registered by name. A backend starts the servers it needs through
// the run's cluster and hands each simulated client process a Client of its
// own (its own connections), as separate machines would have.
package backends

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/internal/registry"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
)

// Sentinel errors of this package. ErrBusy and ErrNotHeld are certain
// failures (recorded as fail); any error not marked certain is recorded as
// info, because the operation may have happened.
var (
	// errUnknown is returned for a backend name that is not registered.
	errUnknown = errors.New("unknown backend")
	// ErrBusy means the lock is held by someone else: the acquire did not happen.
	ErrBusy = errors.New("lock is busy")
	// ErrNotHeld means a release or extend found the lock no longer ours.
	ErrNotHeld = errors.New("lock is not held by this client")
	// ErrAbort is wrapped by an Acquire or Release error that is no
	// outcome but a harness failure (a client process broke the protocol
	// or died): the client loop records it as info and stops, and the run
	// fails.
	ErrAbort = errors.New("client failed")
	// errCertain marks an error as a certain failure (see Certain).
	errCertain = errors.New("certain failure")
)

// Certain marks err as a failure that certainly did not take effect (the
// request never left, or the server refused it), so it is recorded as fail.
func Certain(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w (%w)", err, errCertain)
}

// Outcome maps an operation's error to its history type: nil is ok; a
// certain failure is fail; anything else (timeouts, lost connections) is
// info, because nobody knows whether it happened.
func Outcome(err error) history.Type {
	switch {
	case err == nil:
		return history.OK
	case errors.Is(err, ErrBusy), errors.Is(err, ErrNotHeld), errors.Is(err, errCertain):
		return history.Fail
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && !op.Timeout() {
		// The connection was refused: the request was never sent.
		return history.Fail
	}
	return history.Info
}

// Grant is what a successful acquire gives the client.
type Grant struct {
	// Fence is the fencing token, nil when the backend issues none.
	Fence *int64
	// Lease is how long the client may assume it holds the lock, counted
	// from the moment Acquire returned (the TTL less the time the acquire
	// took); zero with HasLease false for locks without a lease.
	Lease    time.Duration
	HasLease bool
	// Token is the backend's own proof of ownership (a random value).
	Token string
	// Lost, when not nil, is closed when a watchdog finds the lock lost.
	Lost <-chan struct{}
	// Nodes names the servers that granted the lock, for quorum locks
	// (letters in start order: "A", "B", "C"); recorded with the acquire.
	Nodes []string
	// Conn is the backend's session for the critical section, when the
	// resource should act inside it (a pgx.Tx for pg-advisory-xact with the
	// postgres resource); nil otherwise. Resources type-assert what they know.
	Conn any
}

// ClientEnv is what a backend gets to build one simulated process's client.
type ClientEnv struct {
	// Process is the client's number.
	Process int
	// Gate is the process's pause gate: any goroutine the client runs on
	// its own (a lease watchdog) must wait on it before each step.
	Gate *clientfault.Gate
	// History records the process's ops; a watchdog records its extend
	// ops through it with InvokeBackground (which waits while the
	// process's own op is outstanding; the process's next op never waits
	// for an extend, but ends it as info when it is still open).
	History *history.Proc
	// Clock is the process's own clock: lease arithmetic reads it, never
	// time.Now, so a clock nemesis can skew it.
	Clock *clientfault.Clock
	// WholeProcess is set when the client runs alone in a process of its
	// own, which a pause freezes whole (SIGSTOP): a backend then leaves
	// lease keepalives to its library, as users write it, instead of
	// driving them under Gate.
	WholeProcess bool
}

// Client is one simulated process's view of the lock service.
type Client interface {
	// Acquire tries once to take the lock on key; ErrBusy when held.
	Acquire(ctx context.Context, key string) (Grant, error)
	// Release gives the lock back; ErrNotHeld when it was no longer ours.
	Release(ctx context.Context, key string, g Grant) error
	// Close drops the client's connections.
	Close() error
}

// Backend is one lock implementation set up for a run.
type Backend interface {
	// Client returns the lock client of one process, with connections of
	// its own (dialled through env.Cluster.ClientAddr).
	Client(ctx context.Context, c ClientEnv) (Client, error)
	// Close releases what the backend holds (not the servers: the cluster
	// owns those).
	Close() error
}

// Env is what a backend gets to build itself.
type Env struct {
	// Cluster starts the servers the backend needs. Env crosses to a
	// client process as JSON (clientprotocol.ChildConfigOf) without it and
	// without Options, which the client protocol's open request gives.
	Cluster *cluster.Cluster `json:"-"`
	// TTL is the lock lease.
	TTL time.Duration
	// OpTimeout bounds each request a client makes.
	OpTimeout time.Duration
	// Clients is the number of client processes; Keys the lock keys.
	Clients int
	Keys    []string
	// Seed seeds any randomness the backend uses.
	Seed int64
	// Servers are the run's settings for the servers it starts, whatever
	// their kind: Redis persistence, a Sentinel group for single-Redis
	// backends, each kind's own settings (an ensemble's size, PostgreSQL's
	// timeouts: cluster.OptionsOf).
	Servers cluster.StartOptions
	// ExecServers are the servers the exec backend starts for its program,
	// by kind, one entry per server (the scenario's exec.servers).
	ExecServers []string
	// Options are the backend's own settings (the scenario's
	// backend_options block for it, decoded by DecodeOptions), of the type
	// its Info.Options returns; nil means its defaults.
	Options Options `json:"-"`
}

// Info describes a backend for `locktorture list backends`.
type Info struct {
	// Name is what users type.
	Name string
	// Description is one line.
	Description string
	// Servers names the servers the backend needs ("1 redis-server").
	Servers string
	// Fencing is set when grants carry fencing tokens.
	Fencing bool
	// Lease is set when grants carry a lease.
	Lease bool
	// LockFree is set for a comparator that takes no lock at all (its
	// "holds" overlap by design): the mutex and linearizable checkers do
	// not apply and are skipped.
	LockFree bool
	// Resources lists the resources the backend works with; empty means any.
	Resources []string
	// Sentinel is set when the backend can run over a Sentinel group
	// (Env.Redis = sentinel).
	Sentinel bool
	// Kinds names the kinds of server the backend runs ("redis",
	// "postgres", "etcd"); required ([]string{} for none): faults that act
	// on servers ask it, so a backend that left it out would be refused
	// every partition, kill and delay.
	Kinds []string
	// Counts, for a kind the backend needs more than one server of, says
	// how many (redlock: 5 redis): a run on someone else's servers with
	// fewer is refused before it starts. A kind not listed needs one.
	Counts map[string]int
	// InTx is set when a grant's Conn is a transaction that the postgres
	// (or mysql) resource acts inside: it cannot leave a client's process,
	// so client processes refuse that resource.
	InTx bool
	// Tables is set when the backend's clients use tables of the run's
	// own in PostgreSQL (pg-skip-locked's rows to claim, pg-optimistic's
	// versioned rows).
	Tables bool
	// Options, when set, returns the backend's fresh options with their
	// defaults: the keys of its backend_options block (see Options).
	Options func() Options
	// Library, for a backend that is a third-party library driven through
	// its public API, names it (results.json's library field).
	Library *Library
	// RenewsItself is set when the library keeps its lock alive from
	// goroutines and timers of its own (a renewal loop, a lease
	// keepalive, session pings). Only a stopped process freezes those, so
	// its clients run as processes of their own unless the scenario says
	// client_mode inproc (scenarios.Scenario.ProcessClients): a pause is
	// then a real SIGSTOP. In-process its connections wait at the pause
	// gate, but its timers run on through a pause.
	RenewsItself bool
	// Renews is set when the lock lives on while a renewal of ours runs
	// (a watchdog extending its lease, a lease keepalive loop, a session's
	// pings): with RenewsItself, the renews ability the renew-partition
	// and renew-delay families select by.
	Renews bool
}

// ServerKinds returns the kinds of server the backend runs.
func (i Info) ServerKinds() []string { return i.Kinds }

// Factory builds a backend for a run.
type Factory func(ctx context.Context, env Env) (Backend, error)

// entry is one registered backend.
type entry struct {
	info Info
	new  Factory
}

var registered = registry.New[entry](errUnknown)

// Register adds a backend; it panics on a duplicate name or a backend that
// does not say which servers it needs (programming errors).
func Register(info Info, f Factory) {
	if info.Kinds == nil {
		panic("backends: " + info.Name + " does not say which servers it needs (Kinds; []string{} for none)")
	}
	registered.Add(info.Name, entry{info, f})
}

// Lookup returns a backend's description and factory, or an error wrapping
// errUnknown that lists the known names.
func Lookup(name string) (Info, Factory, error) {
	e, err := registered.Get(name)
	return e.info, e.new, err
}

// List returns every registered backend, sorted by name.
func List() []Info {
	var out []Info
	for _, e := range registered.All() {
		out = append(out, e.info)
	}
	return out
}

// Names returns every registered backend name, sorted.
func Names() []string { return registered.Names() }

// leaseLeft is the lease a client may count on after an acquire that
// started at start (read from clock): the TTL less the time the acquire
// took by that clock, never negative.
func leaseLeft(clock *clientfault.Clock, ttl time.Duration, start time.Time) time.Duration {
	left := ttl - clock.Since(start)
	if left < 0 {
		return 0
	}
	return left
}
