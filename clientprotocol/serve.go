package clientprotocol

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
)

// ChildConfig is what `locktorture client` needs, besides the open
// request, to run a built-in backend's client: the run's settings that the
// protocol does not carry. The harness passes it in ConfigEnv.
type ChildConfig struct {
	// Backend is the built-in backend's name.
	Backend string `json:"backend"`
	// Env is the run's backends.Env as the run made it
	// (scenarios.Scenario.BackendEnv; ChildConfigOf), but for what does not
	// cross as JSON: the cluster and the backend's options, which the open
	// request gives (its servers, lease, timeout and options), and the
	// kinds' settings, which Kinds carries.
	Env backends.Env `json:"env"`
	// Kinds are the kinds' own settings of the run (its etcd: and
	// postgres: blocks), by kind, each as JSON of the type its
	// cluster.Configurable.Options returns (EncodeKinds).
	Kinds map[string]json.RawMessage `json:"kinds,omitempty"`
	// Aliases map each server's real address to this client's link to it.
	Aliases map[string]string `json:"aliases,omitempty"`
}

// server is the child side of the protocol for a built-in backend.
type server struct {
	cfg   ChildConfig
	omu   sync.Mutex
	out   *bufio.Writer
	clock *clientfault.Clock

	backend backends.Backend
	client  backends.Client
	timeout time.Duration
	grants  map[string]childGrant
	rec     *history.Recorder
}

// childGrant is a grant the child holds, and the end of its lost watcher.
type childGrant struct {
	g    backends.Grant
	done chan struct{}
}

// Serve is `locktorture client`: it reads requests from in and answers on
// out until the close request or the end of in. It runs cfg.Backend's
// client inside this process, built from the open request's addresses
// only; it starts no server.
func Serve(ctx context.Context, in io.Reader, out io.Writer, cfg ChildConfig) error {
	s := &server{cfg: cfg, out: bufio.NewWriter(out), clock: clientfault.NewClock(), grants: map[string]childGrant{}}
	defer s.shutdown()
	reqs := make(chan Inbound, 16)
	readErr := make(chan error, 1)
	go func() {
		defer close(reqs)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64*1024), 4<<20)
		for sc.Scan() {
			var r Inbound
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				readErr <- fmt.Errorf("bad request %q: %w", sc.Text(), err)
				return
			}
			if r.Op == opClock && r.ID == nil {
				s.setClock(r)
				continue
			}
			reqs <- r
		}
		readErr <- sc.Err()
	}()
	for r := range reqs {
		if r.ID == nil {
			return fmt.Errorf("a request without an id: %+v", r)
		}
		done, err := s.handle(ctx, r)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
	return <-readErr
}

// setClock makes the child's clock read the harness's clock of this process.
func (s *server) setClock(r Inbound) {
	s.clock.Reset()
	if r.OffsetNS != 0 {
		s.clock.Jump(time.Duration(r.OffsetNS))
	}
	if r.Rate != 0 && r.Rate != 1 {
		s.clock.SetRate(r.Rate)
	}
}

// emit writes one line.
func (s *server) emit(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.omu.Lock()
	defer s.omu.Unlock()
	if _, err := s.out.Write(append(b, '\n')); err != nil {
		return err
	}
	return s.out.Flush()
}

func (s *server) reply(id int64, m Message) error {
	m.ID = &id
	return s.emit(m)
}

// outcome is a reply for err (nil: ok).
func outcome(err error) Message {
	switch backends.Outcome(err) {
	case history.OK:
		return Message{Type: TypeOK}
	case history.Fail:
		switch {
		case errors.Is(err, backends.ErrBusy):
			return Message{Type: TypeFail, Error: "busy"}
		case errors.Is(err, backends.ErrNotHeld):
			return Message{Type: TypeFail, Error: "not held"}
		}
		return Message{Type: TypeFail, Error: err.Error()}
	}
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "timeout: " + msg
	}
	return Message{Type: TypeInfo, Error: msg}
}

// handle answers one request; done is set after close.
func (s *server) handle(ctx context.Context, r Inbound) (done bool, err error) {
	id := *r.ID
	switch r.Op {
	case OpOpen:
		if s.client != nil {
			return false, s.reply(id, Message{Type: TypeFail, Error: "already open"})
		}
		if err := s.open(ctx, r); err != nil {
			return false, s.reply(id, Message{Type: TypeFail, Error: err.Error()})
		}
		return false, s.reply(id, Message{Type: TypeOK, Abilities: []string{AbilityClock}})
	case OpClose:
		s.shutdown()
		return true, s.reply(id, Message{Type: TypeOK})
	case OpAcquire, OpRelease:
		if s.client == nil {
			return false, s.reply(id, Message{Type: TypeFail, Error: "not open"})
		}
	default:
		return false, s.reply(id, Message{Type: TypeFail, Error: fmt.Sprintf("unknown op %q", r.Op)})
	}
	octx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if r.Op == OpRelease {
		cg, ok := s.grants[r.Key]
		if !ok {
			return false, s.reply(id, Message{Type: TypeFail, Error: "not held"})
		}
		delete(s.grants, r.Key)
		close(cg.done)
		return false, s.reply(id, outcome(s.client.Release(octx, r.Key, cg.g)))
	}
	g, aerr := s.client.Acquire(octx, r.Key)
	m := outcome(aerr)
	if aerr == nil {
		m.Fence, m.Nodes = g.Fence, g.Nodes
		if g.HasLease {
			m.LeaseMS = history.Int64(g.Lease.Milliseconds())
		}
		switch c := g.Conn.(type) {
		case *backends.EtcdConn:
			m.Conn = &Conn{EtcdLockKey: c.LockKey}
		case backends.PGVersion:
			m.Conn = &Conn{PGVersion: history.Int64(c.Version)}
		}
		if old, ok := s.grants[r.Key]; ok {
			close(old.done)
		}
		cg := childGrant{g: g, done: make(chan struct{})}
		s.grants[r.Key] = cg
		if g.Lost != nil {
			go func() {
				select {
				case <-g.Lost:
					_ = s.emit(map[string]string{"event": EventLost, "key": r.Key})
				case <-cg.done:
				}
			}()
		}
	}
	return false, s.reply(id, m)
}

// open builds the backend's client from the given addresses.
func (s *server) open(ctx context.Context, r Inbound) error {
	given := r.Servers
	given.Aliases = s.cfg.Aliases
	given.Auth = r.Auth
	s.timeout = time.Duration(r.TimeoutMS) * time.Millisecond
	if s.timeout <= 0 {
		s.timeout = 500 * time.Millisecond
	}
	_, factory, err := backends.Lookup(s.cfg.Backend)
	if err != nil {
		return err
	}
	opts, err := decodeOptions(s.cfg.Backend, r.Options)
	if err != nil {
		return err
	}
	kinds, err := decodeKinds(s.cfg.Kinds)
	if err != nil {
		return err
	}
	// The run's Env, with what the open request and Kinds give.
	env := s.cfg.Env
	env.Cluster, env.TTL, env.OpTimeout, env.Options = cluster.NewExternal(given), time.Duration(r.TTLMS)*time.Millisecond, s.timeout, opts
	env.Servers.Kinds = kinds
	b, err := factory(ctx, env)
	if err != nil {
		return fmt.Errorf("backend %s: %w", s.cfg.Backend, err)
	}
	s.backend = b
	// The backend's own goroutines (a lease watchdog) record extend ops:
	// each becomes an extend event.
	s.rec = history.NewRecorder(nil, history.RecorderOptions{Observe: s.observe})
	c, err := b.Client(ctx, backends.ClientEnv{Process: r.Process, Gate: clientfault.NewGate(), History: s.rec.Proc(r.Process),
		Clock: s.clock, WholeProcess: true})
	if err != nil {
		return fmt.Errorf("backend %s: client: %w", s.cfg.Backend, err)
	}
	s.client = c
	return nil
}

// observe turns a recorded extend op into an extend event.
func (s *server) observe(op history.Op) {
	if op.F != history.Extend {
		return
	}
	if op.Type == history.Invoke {
		_ = s.emit(Message{Event: EventExtend, Key: op.Key, Phase: "invoke"})
		return
	}
	_ = s.emit(Message{Event: EventExtend, Key: op.Key, Type: string(op.Type), LeaseMS: op.LeaseMS, Error: op.Error})
}

// decodeOptions decodes the open request's options as the backend's own
// (strictly, as a scenario's backend_options block).
func decodeOptions(backend string, opts map[string]any) (backends.Options, error) {
	if len(opts) == 0 {
		return backends.DecodeOptions(backend, nil)
	}
	b, err := yaml.Marshal(opts)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return backends.DecodeOptions(backend, doc.Content[0])
}

// ChildConfigOf is what a client process of backend is told of env, the
// run's backends.Env (scenarios.Scenario.BackendEnv): all of it but the
// cluster and the backend's options, which the open request carries.
func ChildConfigOf(backend string, env backends.Env) (*ChildConfig, error) {
	kinds, err := EncodeKinds(env.Servers.Kinds)
	if err != nil {
		return nil, err
	}
	env.Cluster, env.Options, env.Servers.Kinds = nil, nil, nil
	return &ChildConfig{Backend: backend, Env: env, Kinds: kinds}, nil
}

// EncodeKinds turns the run's kinds' settings into ChildConfig.Kinds.
func EncodeKinds(kinds map[string]cluster.KindOptions) (map[string]json.RawMessage, error) {
	if len(kinds) == 0 {
		return nil, nil
	}
	out := map[string]json.RawMessage{}
	for name, o := range kinds {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("clientprotocol: the settings of %s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// decodeKinds is the run's kinds' settings from ChildConfig.Kinds, each
// decoded into the fresh options of its kind.
func decodeKinds(raw map[string]json.RawMessage) (map[string]cluster.KindOptions, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := map[string]cluster.KindOptions{}
	for name, r := range raw {
		k, _ := cluster.LookupKind(name)
		c, ok := k.Abilities.(cluster.Configurable)
		if !ok {
			return nil, fmt.Errorf("%s: kinds: %q is no kind of server that takes settings (known: %s)", ConfigEnv, name, strings.Join(cluster.KindNames(), ", "))
		}
		o := c.Options()
		if err := json.Unmarshal(r, o); err != nil {
			return nil, fmt.Errorf("%s: kinds: %s: %w", ConfigEnv, name, err)
		}
		out[name] = o
	}
	return out, nil
}

func (s *server) shutdown() {
	for k, cg := range s.grants {
		close(cg.done)
		delete(s.grants, k)
	}
	if s.client != nil {
		_ = s.client.Close()
		s.client = nil
	}
	if s.backend != nil {
		_ = s.backend.Close()
		s.backend = nil
	}
	if s.rec != nil {
		_ = s.rec.Close()
		s.rec = nil
	}
}
