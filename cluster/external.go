package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"
)

// A run against servers someone else runs touches nothing outside its own
// namespace: every lock key is "<namespace>:k<i>" (so each backend's server
// keys — locktorture:lock:<namespace>:k0, locktorture/lock/<namespace>:k0,
// advisory lock ids hashed from the key — carry it), and PostgreSQL tables
// live in a schema of the run's own. Cleanup removes exactly those.

// NewNamespace returns a fresh namespace for one external run: "lt" and
// eight hex digits.
func NewNamespace() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "lt" + hex.EncodeToString(b[:])
}

// PostgresSchema is the schema an external run's tables live in.
func PostgresSchema(namespace string) string { return "locktorture_" + namespace }

// Prepare makes what the run's namespace needs on the servers the run
// uses (a PostgreSQL schema of its own: CREATE SCHEMA fails if it exists,
// so the run never adopts someone else's) and returns the servers as a
// given cluster takes them: PostgreSQL's DSN set to that schema, and the
// controls the file names.
func (f *ServersFile) Prepare(ctx context.Context, namespace string, kinds []string) (Given, error) {
	g := f.Given()
	g.Controls = f.Controls()
	g.KeyMatch = "*" + namespace + ":k*"
	if f.Postgres != nil && slices.Contains(kinds, "postgres") {
		schema := PostgresSchema(namespace)
		if err := pgExec(ctx, g.Postgres, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return Given{}, fmt.Errorf("%w: postgres %s: create the run's schema %s (the role needs CREATE on the database): %w", ErrServerCheck, redactDSN(g.Postgres), schema, err)
		}
		dsn, err := withSearchPath(g.Postgres, schema)
		if err != nil {
			return Given{}, err
		}
		if c, ok := g.Controls[g.Postgres]; ok {
			delete(g.Controls, g.Postgres)
			g.Controls[dsn] = c
		}
		g.Postgres = dsn
	}
	return g, nil
}

// withSearchPath sets a DSN's search_path (a run-time parameter).
func withSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("%w: postgres: %w", ErrServersFile, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Cleanup removes everything of the run's namespace from the servers the
// run used: Redis keys holding "<namespace>:k" (on every Redis server and
// the Sentinels' current primary), etcd keys under locktorture/ holding it,
// and the run's PostgreSQL schema. It touches nothing else. It tries every
// server and returns every problem.
func (f *ServersFile) Cleanup(ctx context.Context, namespace string, kinds []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if namespace == "" {
		return errors.New("cluster: cleanup: no namespace")
	}
	var errs []error
	if slices.Contains(kinds, "redis") {
		addrs := f.Given().Redis
		if s := f.Sentinel; s != nil {
			for _, e := range s.Addrs {
				if v, err := redisCall(ctx, e.address(), "SENTINEL", "get-master-addr-by-name", s.Master); err == nil {
					if a, ok := v.([]any); ok && len(a) == 2 {
						addrs = append(addrs, fmt.Sprintf("%v:%v", a[0], a[1]))
						break
					}
				}
			}
		}
		for _, a := range addrs {
			if err := redisDeleteMatching(ctx, a, "*"+namespace+":k*"); err != nil {
				errs = append(errs, fmt.Errorf("redis %s: %w", a, err))
			}
		}
	}
	if slices.Contains(kinds, "etcd") {
		for _, e := range f.Etcd {
			err := etcdDeleteHolding(ctx, e.address(), "locktorture/", namespace+":k")
			if err == nil {
				break // one member is the whole cluster
			}
			errs = append(errs, fmt.Errorf("etcd %s: %w", e.address(), err))
		}
	}
	if slices.Contains(kinds, "zookeeper") && len(f.Zookeeper) > 0 {
		if err := zkDeleteRun(ctx, f.Given().Zookeeper, "/locktorture", namespace+":k"); err != nil {
			errs = append(errs, fmt.Errorf("zookeeper: %w", err))
		}
	}
	if slices.Contains(kinds, "postgres") && f.Postgres != nil {
		schema := PostgresSchema(namespace)
		if err := pgExec(ctx, f.Postgres.address(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			errs = append(errs, fmt.Errorf("postgres: drop the run's schema %s: %w", schema, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: cleanup of run %s: %w", namespace, err)
	}
	return nil
}

// zkDeleteRun deletes the children of root whose names begin with prefix,
// with everything under them (the lock recipe's per-key znodes; their
// ephemeral lock nodes are gone with the run's sessions).
func zkDeleteRun(ctx context.Context, servers []string, root, prefix string) error {
	conn, events, err := zk.Connect(servers, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	for conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-events:
		}
	}
	kids, _, err := conn.Children(root)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	var del func(p string) error
	del = func(p string) error {
		cs, _, err := conn.Children(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		for _, c := range cs {
			if err := del(p + "/" + c); err != nil {
				return err
			}
		}
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
	for _, k := range kids {
		if strings.HasPrefix(k, prefix) {
			if err := del(root + "/" + k); err != nil {
				return err
			}
		}
	}
	return nil
}

// zkQuiet keeps go-zookeeper's connection chatter out of the run's output.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// redisDeleteMatching deletes the keys matching a SCAN pattern.
func redisDeleteMatching(ctx context.Context, addr, pattern string) error {
	cursor := "0"
	for {
		v, err := redisCall(ctx, addr, "SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
		if err != nil {
			return err
		}
		r, ok := v.([]any)
		if !ok || len(r) != 2 {
			return fmt.Errorf("SCAN answered %v", v)
		}
		cursor, _ = r[0].(string)
		keys, _ := r[1].([]any)
		if len(keys) > 0 {
			args := []string{"DEL"}
			for _, k := range keys {
				args = append(args, fmt.Sprint(k))
			}
			if _, err := redisCall(ctx, addr, args...); err != nil {
				return err
			}
		}
		if cursor == "0" || cursor == "" {
			return nil
		}
	}
}

// etcdDeleteHolding deletes the keys under prefix that hold part, through
// etcd's JSON gateway (/v3/kv/range, /v3/kv/deleterange).
func etcdDeleteHolding(ctx context.Context, addr, prefix, part string) error {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	end := prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
	body, err := etcdPost(ctx, addr, "/v3/kv/range", map[string]any{"key": b64(prefix), "range_end": b64(end), "keys_only": true})
	if err != nil {
		return err
	}
	var resp struct {
		Kvs []struct {
			Key string `json:"key"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("range: %w", err)
	}
	for _, kv := range resp.Kvs {
		k, err := base64.StdEncoding.DecodeString(kv.Key)
		if err != nil || !strings.Contains(string(k), part) {
			continue
		}
		if _, err := etcdPost(ctx, addr, "/v3/kv/deleterange", map[string]any{"key": kv.Key}); err != nil {
			return err
		}
	}
	return nil
}

// etcdPost sends one JSON request to an etcd member's gateway.
func etcdPost(ctx context.Context, addr, path string, req any) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return etcdHTTP(ctx, addr, "http://"+addr, http.MethodPost, path, string(b), 64<<20)
}

// pgExec runs one statement on dsn.
func pgExec(ctx context.Context, dsn, stmt string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}
