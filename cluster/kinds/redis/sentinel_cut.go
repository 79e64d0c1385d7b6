package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/journal"
)

// replicasOf asks the Sentinels for the primary's replicas (host:port).
func (g *SentinelGroup) replicasOf(ctx context.Context) ([]string, error) {
	var last error
	for _, s := range g.Sentinels {
		v, err := redisCall(ctx, endpoint(s), "SENTINEL", "replicas", g.MasterName())
		if err != nil {
			last = err
			continue
		}
		var out []string
		for _, r := range asList(v) {
			f := asList(r)
			fields := map[string]string{}
			for i := 0; i+1 < len(f); i += 2 {
				k, _ := f[i].(string)
				val, _ := f[i+1].(string)
				fields[k] = val
			}
			if fields["ip"] != "" && fields["port"] != "" {
				out = append(out, net.JoinHostPort(fields["ip"], fields["port"]))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("cluster: no Sentinel lists the replicas: %v", last)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// CutReplication stops the group's replicas from syncing with the primary
// by speaking to the servers themselves, for servers whose links the
// harness does not own (someone else's, controlled): each replica is given
// a password its primary will refuse (masterauth) and its link to the
// primary is dropped, so it retries and fails until Heal gives its own
// setting back. The replicas stay up and answer Sentinel, which can still
// promote one. It returns the heal.
func (g *SentinelGroup) CutReplication(ctx context.Context) (heal func(context.Context) error, err error) {
	replicas, err := g.replicasOf(ctx)
	if err != nil {
		return nil, err
	}
	if len(replicas) == 0 {
		return nil, errors.New("cluster: the Sentinels know no replica to cut")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	bogus := "locktorture-cut-" + hex.EncodeToString(b[:])
	saved := map[string]string{}
	undone := map[string]func(){}
	heal = func(ctx context.Context) error {
		var errs []error
		for addr, old := range saved {
			if _, err := redisCall(ctx, cluster.Endpoint{Addr: addr, Auth: g.MasterAuth}, "CONFIG", "SET", "masterauth", old); err != nil {
				errs = append(errs, fmt.Errorf("cluster: heal replication of %s: %w", addr, err))
				continue
			}
			if done := undone[addr]; done != nil {
				done()
			}
		}
		return errors.Join(errs...)
	}
	for _, addr := range replicas {
		v, err := redisCall(ctx, cluster.Endpoint{Addr: addr, Auth: g.MasterAuth}, "CONFIG", "GET", "masterauth")
		if err != nil {
			_ = heal(ctx)
			return nil, fmt.Errorf("cluster: cut replication of %s: %w", addr, err)
		}
		old := ""
		if l := asList(v); len(l) == 2 {
			old, _ = l[1].(string)
		}
		// Written down before it is done: the guard, or a later run, sets
		// it back if the harness dies before Heal.
		done, err := g.journal.Add(journal.Action{Kind: undoRedisConfig, Args: g.MasterAuth.JournalArgs(map[string]string{"addr": addr, "param": "masterauth", "value": old}),
			What: "give replica " + addr + " its own masterauth back"})
		if err != nil {
			_ = heal(ctx)
			return nil, fmt.Errorf("cluster: cut replication of %s: %w", addr, err)
		}
		undone[addr] = done
		saved[addr] = old
		if _, err := redisCall(ctx, cluster.Endpoint{Addr: addr, Auth: g.MasterAuth}, "CONFIG", "SET", "masterauth", bogus); err != nil {
			_ = heal(ctx)
			return nil, fmt.Errorf("cluster: cut replication of %s: %w", addr, err)
		}
		if _, err := redisCall(ctx, cluster.Endpoint{Addr: addr, Auth: g.MasterAuth}, "CLIENT", "KILL", "TYPE", "master"); err != nil {
			_ = heal(ctx)
			return nil, fmt.Errorf("cluster: cut replication of %s: %w", addr, err)
		}
	}
	return heal, nil
}
