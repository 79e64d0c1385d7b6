package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/secret"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// How the harness reaches an etcd that asks for credentials: its own
// checks and clean-up speak gRPC (clientv3) like the backends, because
// etcd's JSON gateway refuses a client certificate that names a user
// ("CommonName of client sending a request against gateway will be
// ignored"); only /health and /version, which take no credentials, stay
// HTTP.

// etcdRootUser is the user a run's own etcd is locked with.
const etcdRootUser = "root"

// etcdCallTimeout bounds one harness call to an etcd member.
const etcdCallTimeout = 2 * time.Second

// ClientConfig is what a client of the etcd dials endpoints with (each a
// member's address or a link to it): the members' credentials and TLS.
// When the members' certificates are for different host names and the
// servers file names none (tls.server_name), a certificate valid for any
// member's host is taken: a client dialling a link cannot say which
// member is behind it.
func (e *Etcd) ClientConfig(endpoints []string, dialTimeout time.Duration) (clientv3.Config, error) {
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: dialTimeout, Logger: zap.NewNop()}
	if len(e.members) == 0 {
		return cfg, nil
	}
	a := e.members[0].Auth()
	if a == nil {
		return cfg, nil
	}
	cfg.Username, cfg.Password = a.Username, a.Password
	t, err := etcdTLS(a, e.hosts())
	if err != nil {
		return cfg, fmt.Errorf("etcd: %w", err)
	}
	cfg.TLS = t
	return cfg, nil
}

// hosts are the members' own host names or addresses.
func (e *Etcd) hosts() []string {
	var out []string
	for _, m := range e.members {
		if h, _, err := net.SplitHostPort(m.Addr()); err == nil {
			out = append(out, h)
		}
	}
	return out
}

// etcdTLS is the TLS client configuration of a (nil: plain), checking the
// server's certificate against the name a gives, else against any of
// hosts.
func etcdTLS(a *cluster.Auth, hosts []string) (*tls.Config, error) {
	if a == nil || a.TLS == nil {
		return nil, nil
	}
	if a.TLS.ServerName != "" || a.TLS.InsecureSkipVerify || len(hosts) == 0 {
		return a.TLSConfig(net.JoinHostPort(firstOr(hosts, ""), "0"))
	}
	t, err := a.TLSConfig("")
	if err != nil {
		return nil, err
	}
	roots := t.RootCAs
	// Go checks the chain and the name itself unless told not to; the
	// name is then checked here against every member's.
	t.InsecureSkipVerify = true //nolint:gosec // verified below
	t.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		leaf := cs.PeerCertificates[0]
		if _, err := leaf.Verify(opts); err != nil {
			return err
		}
		var errs []error
		for _, h := range hosts {
			err := leaf.VerifyHostname(h)
			if err == nil {
				return nil
			}
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	return t, nil
}

func firstOr(l []string, def string) string {
	if len(l) == 0 {
		return def
	}
	return l[0]
}

// dial is a gRPC client of the member alone, as the harness reaches it;
// withUser adds the member's user and password (authenticating takes a
// quorum: a status needs none).
func (m *Member) dial(withUser bool) (*clientv3.Client, error) {
	cfg := clientv3.Config{Endpoints: []string{m.Addr()}, DialTimeout: etcdCallTimeout, Logger: zap.NewNop()}
	if a := m.Auth(); a != nil {
		h, _, _ := net.SplitHostPort(m.Addr())
		t, err := etcdTLS(a, []string{h})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name(), err)
		}
		cfg.TLS = t
		if withUser {
			cfg.Username, cfg.Password = a.Username, a.Password
		}
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", m.Name(), etcdRefusal(err))
	}
	return cli, nil
}

// etcdRefusal is err in one line, saying plainly when the member refused
// the credentials (and never repeating a secret).
func etcdRefusal(err error) string {
	s := secret.Redact(err.Error())
	for _, r := range []string{"authentication failed", "invalid user ID or password", "user name is empty", "permission denied", "certificate", "tls:"} {
		if strings.Contains(s, r) {
			return "refused: " + strings.ReplaceAll(s, "\n", " ")
		}
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// httpClient is the member's HTTP client (/health, /version): TLS with
// its credentials' files when it asks for them.
func (m *Member) httpClient() (*http.Client, error) {
	if m.Auth() == nil || m.Auth().TLS == nil {
		return httpClient, nil
	}
	h, _, _ := net.SplitHostPort(m.Addr())
	t, err := etcdTLS(m.Auth(), []string{h})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name(), err)
	}
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: t}}, nil
}

// lock makes the run's etcd ask for a password of the run's own: a root
// user with a fresh random password, then auth enable. Every member then
// asks for it (in addition to a client certificate with TLS), so no other
// user of the machine can read or write its keys; the harness and the
// run's clients are given it.
func (e *Etcd) lock(ctx context.Context, tlsFiles *cluster.TLSFiles) error {
	for _, m := range e.members {
		m.SetAuth(&cluster.Auth{TLS: tlsFiles})
	}
	cli, err := e.members[0].dial(false)
	if err != nil {
		return err
	}
	defer cli.Close()
	pw := cluster.NewPassword()
	secret.Register(pw)
	steps := []struct {
		what string
		do   func(ctx context.Context) error
	}{
		{"add the root role", func(ctx context.Context) error { _, err := cli.RoleAdd(ctx, etcdRootUser); return err }},
		{"add the root user", func(ctx context.Context) error { _, err := cli.UserAdd(ctx, etcdRootUser, pw); return err }},
		{"grant it the root role", func(ctx context.Context) error {
			_, err := cli.UserGrantRole(ctx, etcdRootUser, etcdRootUser)
			return err
		}},
		{"enable auth", func(ctx context.Context) error { _, err := cli.AuthEnable(ctx); return err }},
	}
	for _, s := range steps {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.do(cctx)
		cancel()
		if err != nil {
			return fmt.Errorf("%w: etcd: %s: %s", cluster.ErrStart, s.what, etcdRefusal(err))
		}
	}
	for _, m := range e.members {
		m.SetAuth(&cluster.Auth{Username: etcdRootUser, Password: pw, TLS: tlsFiles})
	}
	return nil
}

// status asks the member for its id, its leader and its term over gRPC.
func (m *Member) status(ctx context.Context) (Status, error) {
	cli, err := m.dial(false)
	if err != nil {
		return Status{}, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
	defer cancel()
	r, err := cli.Status(ctx, m.Addr())
	if err != nil {
		return Status{}, fmt.Errorf("%s status: %s", m.Name(), etcdRefusal(err))
	}
	if r.Header == nil || r.Header.MemberId == 0 {
		return Status{}, fmt.Errorf("%s status: no member id", m.Name())
	}
	return Status{ID: r.Header.MemberId, Leader: r.Leader, RaftTerm: r.RaftTerm}, nil
}

// etcdDeleteHolding deletes the keys under prefix that hold part, on the
// etcd member at e, with its credentials.
func etcdDeleteHolding(ctx context.Context, e cluster.Endpoint, prefix, part string) error {
	m := endpointMember(e)
	cli, err := m.dial(true)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("range: %s", etcdRefusal(err))
	}
	for _, kv := range r.Kvs {
		if !strings.Contains(string(kv.Key), part) {
			continue
		}
		if _, err := cli.Delete(ctx, string(kv.Key)); err != nil {
			return fmt.Errorf("delete: %s", etcdRefusal(err))
		}
	}
	return nil
}

// leaseKey is a key bound to a lease, as revokeHolders finds it.
type leaseKey struct {
	key   string
	rev   int64
	lease int64
}

// leasedKeys lists every key bound to a lease, over gRPC.
func (m *Member) leasedKeys(ctx context.Context) ([]leaseKey, *clientv3.Client, error) {
	cli, err := m.dial(true)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
	defer cancel()
	r, err := cli.Get(cctx, "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		cli.Close()
		return nil, nil, fmt.Errorf("%s: range: %s", m.Name(), etcdRefusal(err))
	}
	var out []leaseKey
	for _, kv := range r.Kvs {
		if kv.Lease != 0 {
			out = append(out, leaseKey{string(kv.Key), kv.CreateRevision, kv.Lease})
		}
	}
	return out, cli, nil
}

// check says whether an etcd someone else runs answers healthy and takes
// the credentials the servers file gives: it reads under locktorture/
// (nothing but a key's name, one at most) as the run's clients will.
func (m *Member) check(ctx context.Context) error {
	if err := m.health(ctx); err != nil {
		return errors.New(etcdRefusal(err))
	}
	cli, err := m.dial(true)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), m.Name()+": "))
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
	defer cancel()
	if _, err := cli.Get(ctx, "locktorture/", clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1)); err != nil {
		return errors.New(etcdRefusal(err))
	}
	return nil
}

// KillSessions has etcd revoke the session leases that hold locks: under
// each lock prefix (a key's parent path), the key with the lowest create
// revision owns the lock (etcd's concurrency Mutex), and its lease is
// revoked, which deletes the key. Which lease is whose is not visible
// to the server, so the clients named are not used: the holders' leases
// are revoked.
func (e *Etcd) KillSessions(ctx context.Context, clients []int) ([]map[string]any, error) {
	ms := e.Members()
	if len(ms) == 0 {
		return nil, fmt.Errorf("etcd: no member")
	}
	var lastErr error
	for _, m := range ms {
		out, err := m.revokeHolders(ctx)
		if err == nil {
			return out, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// revokeHolders lists every key bound to a lease and revokes the lease of
// the oldest key under each parent path.
func (m *Member) revokeHolders(ctx context.Context) ([]map[string]any, error) {
	keys, cli, err := m.leasedKeys(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	oldest := map[string]leaseKey{}
	for _, kv := range keys {
		parent := kv.key
		if i := strings.LastIndexByte(kv.key, '/'); i >= 0 {
			parent = kv.key[:i]
		}
		if h, ok := oldest[parent]; !ok || kv.rev < h.rev {
			oldest[parent] = kv
		}
	}
	parents := make([]string, 0, len(oldest))
	for p := range oldest {
		parents = append(parents, p)
	}
	sort.Strings(parents)
	var out []map[string]any
	for _, p := range parents {
		h := oldest[p]
		lease := strconv.FormatInt(h.lease, 10)
		cctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
		_, err := cli.Revoke(cctx, clientv3.LeaseID(h.lease))
		cancel()
		if err != nil {
			return out, fmt.Errorf("%s: revoke lease %s: %s", m.Name(), lease, etcdRefusal(err))
		}
		out = append(out, map[string]any{"key": h.key, "lease": lease, "revoked": true})
	}
	return out, nil
}
