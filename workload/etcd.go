package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
)

// resourceEtcd is a value per key stored in the run's etcd, named for its kind.
const resourceEtcd = etcd.Kind

// The etcd resource's keys: the value of key k is at etcdValuePrefix+k and
// the highest fence seen for k at etcdFencePrefix+k (20 zero-padded
// digits, so that etcd's byte-wise comparison orders them as numbers).
const (
	etcdValuePrefix = "locktorture/value/"
	etcdFencePrefix = "locktorture/fence/"
)

// etcdResourceTimeout bounds each resource request (the client loop gives
// the resource the run's context, with no deadline of its own).
const etcdResourceTimeout = 2 * time.Second

func init() {
	registerResource(resourceEtcd, newEtcdResource)
}

// etcdResource is the etcd resource: one integer per key, stored in the run's etcd
// (the one the etcd lock backend uses, started once per run).
//
// With fencing none, a read is a Get and a write a Put. With fencing writes
// (or all, which fences reads too), an access carrying a fence is one etcd
// transaction that succeeds only if the fence is not below the highest
// fence recorded for the key (which it then records), and — when the grant
// comes from the etcd backend, whose Grant.Conn is a *backends.EtcdConn —
// only if the lock key still exists with the fence as its create revision:
//
//	If(Compare(CreateRevision(lockKey), "=", fence), Compare(Value(fenceKey), "<", fence+1))
//	.Then(Put(valueKey, v), Put(fenceKey, fence))
//
// That is the guard etcd's docs recommend: a holder whose lease ran out (its
// lock key deleted) cannot write, even with a fence no one has beaten yet.
// A refused access is an error wrapping ErrStale that says why. Accesses
// without a fence are not checked, as with the memory resource. Accesses
// with an EtcdConn go over that lock client's own connection (its links);
// others, and FinalRead (which bypasses fences), over the resource's own.
type etcdResource struct {
	mode string
	cli  *clientv3.Client
}

func newEtcdResource(ctx context.Context, env ResourceEnv) (Resource, error) {
	e, err := etcd.Start(ctx, env.Cluster, etcd.Options{})
	if err != nil {
		return nil, fmt.Errorf("etcd resource: %w", err)
	}
	cfg, err := e.ClientConfig(e.Endpoints(), etcdResourceTimeout)
	if err != nil {
		return nil, fmt.Errorf("etcd resource: %w", err)
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd resource: %w", err)
	}
	r := &etcdResource{mode: env.Fencing, cli: cli}
	// A Value comparison on a missing key fails, so every key starts with
	// a fence record of 0.
	for _, k := range env.Keys {
		cctx, cancel := context.WithTimeout(ctx, etcdResourceTimeout)
		_, err := cli.Put(cctx, etcdFencePrefix+k, fencePad(0))
		cancel()
		if err != nil {
			_ = cli.Close()
			return nil, fmt.Errorf("etcd resource: init %s: %w", k, err)
		}
	}
	return r, nil
}

// fencePad writes a fence so that byte order is numeric order.
func fencePad(f int64) string { return fmt.Sprintf("%020d", f) }

// conn picks the connection and the lock key for an access.
func (r *etcdResource) conn(g backends.Grant) (*clientv3.Client, string) {
	if c, ok := g.Conn.(*backends.EtcdConn); ok && c != nil && c.Client != nil {
		return c.Client, c.LockKey
	}
	if c, ok := g.Conn.(*backends.EtcdConn); ok && c != nil && c.LockKey != "" {
		// A client in a process of its own: its connection stays there,
		// the guard on its lock key holds all the same.
		return r.cli, c.LockKey
	}
	return r.cli, ""
}

// Read implements Resource.
func (r *etcdResource) Read(ctx context.Context, key string, g backends.Grant) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, etcdResourceTimeout)
	defer cancel()
	cli, lockKey := r.conn(g)
	if r.mode != FenceAll || g.Fence == nil {
		resp, err := cli.Get(ctx, etcdValuePrefix+key)
		if err != nil {
			return 0, fmt.Errorf("etcd resource: read %s: %w", key, err)
		}
		return etcdValue(resp.Kvs)
	}
	resp, err := r.guarded(ctx, cli, "read", key, lockKey, *g.Fence, clientv3.OpGet(etcdValuePrefix+key))
	if err != nil {
		return 0, err
	}
	return etcdValue(resp.Responses[0].GetResponseRange().Kvs)
}

// Write implements Resource.
func (r *etcdResource) Write(ctx context.Context, key string, v int64, g backends.Grant) error {
	ctx, cancel := context.WithTimeout(ctx, etcdResourceTimeout)
	defer cancel()
	cli, lockKey := r.conn(g)
	val := strconv.FormatInt(v, 10)
	if r.mode == FenceNone || g.Fence == nil {
		if _, err := cli.Put(ctx, etcdValuePrefix+key, val); err != nil {
			return fmt.Errorf("etcd resource: write %s: %w", key, err)
		}
		return nil
	}
	_, err := r.guarded(ctx, cli, "write", key, lockKey, *g.Fence, clientv3.OpPut(etcdValuePrefix+key, val))
	return err
}

// guarded runs op in a transaction that checks the fence (and, with a lock
// key, the lock's ownership) and records the fence as the highest seen.
func (r *etcdResource) guarded(ctx context.Context, cli *clientv3.Client, what, key, lockKey string, fence int64, op clientv3.Op) (*clientv3.TxnResponse, error) {
	if fence < 0 || fence == math.MaxInt64 {
		return nil, fmt.Errorf("etcd resource: %s %s: fence %d out of range", what, key, fence)
	}
	fk := etcdFencePrefix + key
	// etcd compares with =, !=, < and >: highest <= fence is highest < fence+1.
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.Value(fk), "<", fencePad(fence+1))}
	els := []clientv3.Op{clientv3.OpGet(fk)}
	if lockKey != "" {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(lockKey), "=", fence))
		els = append(els, clientv3.OpGet(lockKey))
	}
	resp, err := cli.Txn(ctx).If(cmps...).Then(op, clientv3.OpPut(fk, fencePad(fence))).Else(els...).Commit()
	if err != nil {
		return nil, fmt.Errorf("etcd resource: %s %s: %w", what, key, err)
	}
	if resp.Succeeded {
		return resp, nil
	}
	var why []string
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		if hi, err := strconv.ParseInt(string(kvs[0].Value), 10, 64); err == nil && hi > fence {
			why = append(why, fmt.Sprintf("below the highest fence seen, %d", hi))
		}
	}
	if lockKey != "" {
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 0 {
			why = append(why, fmt.Sprintf("the lock key %s is gone (its lease expired)", lockKey))
		} else if kvs[0].CreateRevision != fence {
			why = append(why, fmt.Sprintf("the lock key %s has create revision %d", lockKey, kvs[0].CreateRevision))
		}
	}
	if len(why) == 0 {
		why = append(why, "the guard failed")
	}
	return nil, fmt.Errorf("%w: %s of %s with fence %d refused: %s", ErrStale, what, key, fence, strings.Join(why, "; "))
}

// etcdValue decodes a value key (absent is 0).
func etcdValue(kvs []*mvccpb.KeyValue) (int64, error) {
	if len(kvs) == 0 {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd resource: bad value %q: %w", kvs[0].Value, err)
	}
	return v, nil
}

// FinalRead implements Resource: a plain Get, bypassing fences.
func (r *etcdResource) FinalRead(ctx context.Context, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, etcdResourceTimeout)
	defer cancel()
	resp, err := r.cli.Get(ctx, etcdValuePrefix+key)
	if err != nil {
		return 0, fmt.Errorf("etcd resource: final read %s: %w", key, err)
	}
	return etcdValue(resp.Kvs)
}

// Close implements Resource.
func (r *etcdResource) Close() error {
	if err := r.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
