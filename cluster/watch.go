package cluster

import (
	"context"
	"fmt"
	"net"
	"time"
)

// WatchExternal makes an external cluster (servers someone else runs)
// notice a server that goes away mid-run, as a cluster that runs its own
// servers notices one that exits: every interval it dials each server that
// no fault can act on (no control names it), and a server that refuses two
// dials in a row is listed in Died. It returns the function that stops
// watching; on a cluster that starts its own servers it does nothing.
func (c *Cluster) WatchExternal(interval time.Duration) (stop func()) {
	if c.external == nil {
		return func() {}
	}
	type target struct{ name, addr string }
	var ts []target
	for _, s := range c.Servers() {
		key := s.Addr()
		if pg, ok := s.(*Postgres); ok {
			key = pg.externalDSN
		}
		if c.external.g.Controls[key] == "" {
			ts = append(ts, target{s.Name(), s.Addr()})
		}
	}
	if sg := c.SentinelGroup(); sg != nil {
		for _, s := range sg.Sentinels {
			if c.external.g.Controls[s.Addr()] == "" {
				ts = append(ts, target{s.Name(), s.Addr()})
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		failed := map[string]int{}
		reported := map[string]bool{}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, s := range ts {
				if reported[s.name] {
					continue
				}
				dctx, dcancel := context.WithTimeout(ctx, interval)
				conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", s.addr)
				dcancel()
				if ctx.Err() != nil {
					return
				}
				if err == nil {
					_ = conn.Close()
					failed[s.name] = 0
					continue
				}
				if failed[s.name]++; failed[s.name] < 2 {
					continue
				}
				reported[s.name] = true
				c.mu.Lock()
				if !c.closed {
					c.died = append(c.died, fmt.Sprintf("%s (%s, someone else's server) stopped answering at %s: %v", s.name, s.addr, time.Now().Format("15:04:05.000"), err))
				}
				c.mu.Unlock()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
