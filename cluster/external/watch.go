package external

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// Watch makes a cluster notice a server someone else runs that goes away
// mid-run, as a cluster that runs its own servers notices one
// that exits: every interval it dials each server that no fault can act
// on (its unit is uncontrolled: the servers file names no control for
// it), and a server that refuses two dials in a row is listed in Died.
// A controlled one is left alone (a kill fault stops it on purpose), and
// so is every server the cluster starts itself (it notices their exits):
// on such a cluster it does nothing. It returns the function that stops
// watching.
func Watch(c *cluster.Cluster, interval time.Duration) (stop func()) {
	type target struct{ name, addr string }
	var ts []target
	for _, s := range append(c.Servers(), c.Companions()...) {
		if cluster.Uncontrolled(s) {
			ts = append(ts, target{s.Name(), s.Addr()})
		}
	}
	if len(ts) == 0 {
		return func() {}
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
				c.ServerGone(fmt.Sprintf("%s (%s, someone else's server) stopped answering at %s: %v", s.name, s.addr, time.Now().Format("15:04:05.000"), err))
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
