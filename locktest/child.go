package locktest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/locktorture/locktorture/clientprotocol"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
)

// The client side of the client protocol for a user's Lock: what a client
// process (the test binary, re-executed) runs in place of its test.

// serve answers the client protocol on in/out with locks made by newLock
// until the close request or the end of in.
func serve(ctx context.Context, in io.Reader, out io.Writer, newLock NewLock) error {
	s := &childServer{out: bufio.NewWriter(out)}
	defer s.close()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		var r clientprotocol.Inbound
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("locktest: bad request %q: %w", sc.Text(), err)
		}
		if r.ID == nil {
			continue // a message this child did not ask for (a clock step)
		}
		done, err := s.handle(ctx, newLock, r)
		if err != nil || done {
			return err
		}
	}
	return sc.Err()
}

// newTimeout bounds NewLock: its context ends then, or when it returns.
const newTimeout = 10 * time.Second

type childServer struct {
	mu      sync.Mutex
	out     *bufio.Writer
	lock    Lock
	timeout time.Duration
	// acquiring is the key of the Acquire in progress ("" when none), and
	// lostEarly whether Lost was called for it before its reply was out:
	// sent after the reply, it ends the grant (the harness knows of a
	// grant only from its reply).
	acquiring string
	lostEarly bool
}

func (s *childServer) emit(m clientprotocol.Message) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.out.Write(append(b, '\n'))
	_ = s.out.Flush()
}

func (s *childServer) reply(id int64, m clientprotocol.Message) {
	m.ID = &id
	s.emit(m)
}

// result is the reply for an operation's error.
func result(err error) clientprotocol.Message {
	switch {
	case err == nil:
		return clientprotocol.Message{Type: clientprotocol.TypeOK}
	case errors.Is(err, ErrBusy):
		return clientprotocol.Message{Type: clientprotocol.TypeFail, Error: "busy"}
	case errors.Is(err, ErrNotHeld):
		return clientprotocol.Message{Type: clientprotocol.TypeFail, Error: "not held"}
	}
	return clientprotocol.Message{Type: clientprotocol.TypeInfo, Error: err.Error()}
}

func (s *childServer) handle(ctx context.Context, newLock NewLock, r clientprotocol.Inbound) (done bool, err error) {
	id := *r.ID
	switch r.Op {
	case clientprotocol.OpOpen:
		if s.lock != nil {
			s.reply(id, clientprotocol.Message{Type: clientprotocol.TypeFail, Error: "already open"})
			return false, nil
		}
		cfg := s.config(r)
		octx, cancel := context.WithTimeout(ctx, newTimeout)
		l, err := newLock(octx, cfg)
		cancel()
		if err != nil {
			s.reply(id, clientprotocol.Message{Type: clientprotocol.TypeFail, Error: "new lock: " + err.Error()})
			return false, nil
		}
		s.lock = l
		s.reply(id, clientprotocol.Message{Type: clientprotocol.TypeOK})
	case clientprotocol.OpClose:
		s.close()
		s.reply(id, clientprotocol.Message{Type: clientprotocol.TypeOK})
		return true, nil
	case clientprotocol.OpAcquire, clientprotocol.OpRelease:
		if s.lock == nil {
			s.reply(id, clientprotocol.Message{Type: clientprotocol.TypeFail, Error: "not open"})
			return false, nil
		}
		octx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		if r.Op == clientprotocol.OpRelease {
			s.reply(id, result(s.lock.Release(octx, r.Key)))
			return false, nil
		}
		s.mu.Lock()
		s.acquiring, s.lostEarly = r.Key, false
		s.mu.Unlock()
		g, err := s.lock.Acquire(octx, r.Key)
		m := result(err)
		if err == nil {
			if g.Lease != 0 {
				ms := max(g.Lease.Milliseconds(), 0) // a lease run out before the reply
				m.LeaseMS = &ms
			}
			if g.Fenced {
				f := g.Fence
				m.Fence = &f
			}
		}
		s.reply(id, m)
		s.mu.Lock()
		lost := s.lostEarly && err == nil
		s.acquiring, s.lostEarly = "", false
		s.mu.Unlock()
		if lost {
			s.emit(clientprotocol.Message{Event: clientprotocol.EventLost, Key: r.Key})
		}
	default:
		s.reply(id, clientprotocol.Message{Type: clientprotocol.TypeFail, Error: fmt.Sprintf("unknown op %q", r.Op)})
	}
	return false, nil
}

// config is the lock's Config from the open request.
func (s *childServer) config(r clientprotocol.Inbound) Config {
	s.timeout = time.Duration(r.TimeoutMS) * time.Millisecond
	if s.timeout <= 0 {
		s.timeout = 500 * time.Millisecond
	}
	cfg := Config{
		Servers: asServers(r.Servers),
		TTL:     time.Duration(r.TTLMS) * time.Millisecond, Timeout: s.timeout, Process: r.Process,
		events: &events{extended: s.extended, lost: s.lost},
	}
	for kind, list := range r.Auth {
		if cfg.Auth == nil {
			cfg.Auth = map[string][]Credentials{}
		}
		for _, a := range list {
			cfg.Auth[kind] = append(cfg.Auth[kind], credentials(a))
		}
	}
	return cfg
}

// credentials are a's, as a Lock is given them (nil: none asked).
func credentials(a *cluster.Auth) Credentials {
	if a == nil {
		return Credentials{}
	}
	c := Credentials{Username: a.Username, Password: a.Password, Scheme: a.Scheme, Auth: a.Digest}
	if t := a.TLS; t != nil {
		c.TLS = &TLS{CA: t.CA, Cert: t.Cert, Key: t.Key, ServerName: t.ServerName}
	}
	return c
}

// extended sends an extend event: its invoke and its completion.
func (s *childServer) extended(key string, lease time.Duration, err error) {
	s.emit(clientprotocol.Message{Event: clientprotocol.EventExtend, Key: key, Phase: "invoke"})
	m := result(err)
	m.Event, m.Key = clientprotocol.EventExtend, key
	if err == nil && lease > 0 {
		ms := lease.Milliseconds()
		m.LeaseMS = &ms
	}
	s.emit(m)
}

// lost sends a lost event; one for the key of the Acquire in progress
// waits for its reply.
func (s *childServer) lost(key string) {
	s.mu.Lock()
	if s.acquiring != "" && key == s.acquiring {
		s.lostEarly = true
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.emit(clientprotocol.Message{Event: clientprotocol.EventLost, Key: key})
}

func (s *childServer) close() {
	if s.lock != nil {
		_ = s.lock.Close()
		s.lock = nil
	}
}

// asServers is the Servers a lock is built with from the ServerSet a
// client process was given.
func asServers(g cluster.ServerSet) Servers {
	sv := Servers{Redis: g.Addrs(redis.Kind), Etcd: g.Addrs(etcd.Kind), ZooKeeper: g.Addrs(zookeeper.Kind)}
	if dsn := g.Addrs(postgres.Kind); len(dsn) > 0 {
		sv.Postgres = dsn[0]
	}
	if sg := g.Sentinel; sg != nil {
		sv.Sentinel = &Sentinel{Master: sg.Master, Addrs: sg.Addrs}
	}
	return sv
}
