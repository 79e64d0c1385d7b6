// Package tcpdelay is a test helper: a small in-process TCP forwarder in
// front of one server that can hold the bytes flowing either way for a
// while (a slow network, or a reply that arrives late) and can stop
// forwarding altogether until resumed. Bytes are never reordered or lost:
// a held chunk also holds every chunk behind it on its connection.
//
// It is for tests of lock clients (a Redlock acquire whose replies arrive
// after the lease has run out); runs use the cluster's links.
package tcpdelay

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Direction is which way bytes flow through the proxy.
type Direction int

// The two directions.
const (
	// Up is client to server: requests.
	Up Direction = iota
	// Down is server to client: replies.
	Down
)

// Proxy forwards every connection it accepts to one target address.
type Proxy struct {
	ln     net.Listener
	target string
	done   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	delay   [2]time.Duration
	next    [2]time.Duration // one-shot delay of the next chunk, if set
	hasNext [2]bool
	resume  chan struct{} // nil while forwarding; closed on Resume
	conns   map[net.Conn]struct{}
	closed  bool
}

// New listens on a free port of 127.0.0.1 and forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpdelay: listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial instead of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay holds every chunk read in direction d from now on for delay
// before forwarding it (zero: forward at once).
func (p *Proxy) SetDelay(d Direction, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay[d] = delay
}

// DelayNext holds only the next chunk read in direction d, on any
// connection, for delay; later chunks get the SetDelay delay.
func (p *Proxy) DelayNext(d Direction, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next[d], p.hasNext[d] = delay, true
}

// Pause stops forwarding in both directions; bytes queue until Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

// Resume forwards again, queued bytes first.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

// Close stops listening, drops every connection and waits for the
// forwarding goroutines to end. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	err := p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.add(client, server) {
			return
		}
		var pipes sync.WaitGroup
		pipes.Add(2)
		p.wg.Add(3)
		go p.pipe(&pipes, server, client, Up)
		go p.pipe(&pipes, client, server, Down)
		go func() {
			defer p.wg.Done()
			pipes.Wait()
			p.drop(client, server)
		}()
	}
}

// add registers a connection pair, or closes it when the proxy is closed.
func (p *Proxy) add(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) drop(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// chunk is bytes read from one side, due to be written at due.
type chunk struct {
	b   []byte
	due time.Time
}

// delayFor returns how long a chunk read now in direction d is held.
func (p *Proxy) delayFor(d Direction) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hasNext[d] {
		p.hasNext[d] = false
		return p.next[d]
	}
	return p.delay[d]
}

// gate returns the channel to wait on while paused, or nil.
func (p *Proxy) gate() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resume
}

// pipe copies src to dst, holding each chunk as the direction says. When
// src ends, everything read is still delivered, then dst's write side is
// closed.
func (p *Proxy) pipe(pipes *sync.WaitGroup, dst, src net.Conn, d Direction) {
	defer p.wg.Done()
	defer pipes.Done()
	q := make(chan chunk, 1024)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case q <- chunk{b: buf[:n], due: time.Now().Add(p.delayFor(d))}:
				case <-p.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.done:
				t.Stop()
				return
			}
		}
		for g := p.gate(); g != nil; g = p.gate() {
			select {
			case <-g:
			case <-p.done:
				return
			}
		}
		if _, err := dst.Write(c.b); err != nil {
			// The other side is gone: stop reading this side too.
			_ = src.Close()
			for range q {
			}
			return
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
}
