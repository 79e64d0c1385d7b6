package runner

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	rediskind "github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/internal/runca"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// securedServers are servers someone else runs, locked as managed ones
// are: a Redis 7 with an ACL user and TLS only (its default user has a
// password of its own nobody is told), four more plain Redis each with a
// requirepass of its own (Redlock over servers that differ), and a
// Sentinel group whose Sentinels and primary ask for a password.
type securedServers struct {
	tlsAddr  string   // the ACL + TLS Redis
	plain    []string // the four requirepass Redis
	ca       string   // the CA file the TLS Redis's certificate is checked against
	secrets  []string // every password: none may be written down
	sentinel *rediskind.SentinelGroup
	// What to stop when the package's tests end (stopSecured).
	dir   string
	procs []*exec.Cmd
	cl    *cluster.Cluster
}

// stopSecured stops the secured servers, if a test started them
// (TestMain).
func stopSecured() {
	if s := securedOnce.s; s != nil {
		s.close()
	}
}

// close stops every server and removes their files.
func (s *securedServers) close() {
	for _, p := range s.procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
	if s.cl != nil {
		_ = s.cl.Close()
	}
	_ = os.RemoveAll(s.dir)
}

// startSecured starts them once for every test of this file.
var securedOnce = struct {
	sync.Once
	s   *securedServers
	err error
}{}

func startSecured(t *testing.T) *securedServers {
	t.Helper()
	testenv.Require(t, "redis-server", "redis-sentinel")
	securedOnce.Do(func() {
		securedOnce.s, securedOnce.err = newSecuredServers()
	})
	if securedOnce.err != nil {
		t.Fatal(securedOnce.err)
	}
	return securedOnce.s
}

// newSecuredServers starts them (stopSecured stops them; they die with the
// test binary too).
func newSecuredServers() (_ *securedServers, err error) {
	dir, err := os.MkdirTemp("", "lt-secured-")
	if err != nil {
		return nil, err
	}
	s := &securedServers{dir: dir}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	ca, err := runca.New(filepath.Join(dir, "ca"))
	if err != nil {
		return nil, err
	}
	pair, err := ca.Server("redis")
	if err != nil {
		return nil, err
	}
	s.ca = ca.CAFile()
	pw := func(name string) string {
		v := name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		s.secrets = append(s.secrets, v)
		return v
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	s.tlsAddr = "127.0.0.1:" + strconv.Itoa(port)
	aclPW := pw("acl-pw")
	if err := s.startRedisProc("tls", "--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", pair.CertFile, "--tls-key-file", pair.KeyFile, "--tls-ca-cert-file", ca.CAFile(), "--tls-auth-clients", "no",
		"--requirepass", pw("default-pw"), "--user", "lt", "on", ">"+aclPW, "~*", "&*", "+@all"); err != nil {
		return nil, err
	}
	if err := waitRedis(&redis.Options{Addr: s.tlsAddr, Username: "lt", Password: aclPW,
		TLSConfig: &tls.Config{InsecureSkipVerify: true}}); err != nil { //nolint:gosec // readiness only
		return nil, fmt.Errorf("the TLS Redis: %w", err)
	}
	for i := range 4 {
		port, err := cluster.FreePort()
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		p := pw(fmt.Sprintf("plain%d-pw", i))
		if err := s.startRedisProc(fmt.Sprintf("plain%d", i), "--port", strconv.Itoa(port), "--requirepass", p); err != nil {
			return nil, err
		}
		if err := waitRedis(&redis.Options{Addr: addr, Password: p}); err != nil {
			return nil, err
		}
		s.plain = append(s.plain, addr)
	}
	// The Sentinel group: a locked cluster's (a password of its own for the
	// Sentinels and the primary), standing in for someone else's.
	c, err := cluster.New(cluster.Options{TempDir: dir, Locked: true})
	if err != nil {
		return nil, err
	}
	s.cl = c
	s.sentinel, err = rediskind.StartSentinelGroup(context.Background(), c, false)
	if err != nil {
		return nil, err
	}
	s.secrets = append(s.secrets, cluster.AuthOf(s.sentinel.Primary).Password)
	return s, nil
}

// startRedisProc starts a redis-server of the test's own.
func (s *securedServers) startRedisProc(name string, args ...string) error {
	d := filepath.Join(s.dir, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	cmd := exec.Command("redis-server", append([]string{"--bind", "127.0.0.1", "--dir", d, "--save", "", "--appendonly", "no"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.procs = append(s.procs, cmd)
	return nil
}

// waitRedis waits until a client with o's credentials gets PONG.
func waitRedis(o *redis.Options) error {
	rc := redis.NewClient(o)
	defer rc.Close()
	var err error
	for range 100 {
		if err = rc.Ping(context.Background()).Err(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// serversFile writes the servers file naming the secured servers by
// reference: every password in an environment variable of the test.
func (s *securedServers) serversFile(t *testing.T, aclPassword string) string {
	t.Helper()
	t.Setenv("LT_ACL_PW", aclPassword)
	t.Setenv("LT_SENTINEL_PW", cluster.AuthOf(s.sentinel.Primary).Password)
	text := fmt.Sprintf("redis:\n  - addr: %s\n    username: lt\n    password_env: LT_ACL_PW\n    tls: {ca: %s}\n", s.tlsAddr, s.ca)
	for i, a := range s.plain {
		v := fmt.Sprintf("LT_PLAIN%d_PW", i)
		t.Setenv(v, s.secrets[2+i])
		text += fmt.Sprintf("  - {addr: %s, password: \"${%s}\"}\n", a, v)
	}
	text += fmt.Sprintf("sentinel:\n  master: %s\n  addrs: [%s]\n  password_env: LT_SENTINEL_PW\n  master_auth: {username: %s, password_env: LT_SENTINEL_PW}\n",
		s.sentinel.MasterName(), strings.Join(s.sentinel.SentinelAddrs(), ", "), rediskind.User)
	file := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestExternalCredentials: against servers that ask for an ACL user and
// TLS, requirepass (each Redlock node its own) and Sentinel auth, runs
// come out as they do locally; the Python adapter connects over TLS with
// the password it is given; and no password is anywhere in the store or
// in what the run printed.
func TestExternalCredentials(t *testing.T) {
	s := startSecured(t)
	file := s.serversFile(t, s.secrets[0])
	ext := ptr(cluster.ServersExternal)
	short := ptr(1500 * time.Millisecond)
	tests := []struct {
		name     string
		scenario string
		o        scenarios.Overrides
		sentinel bool
		want     checker.Validity
	}{
		{"baseline over ACL and TLS", "baseline", scenarios.Overrides{Duration: short}, false, checker.Valid},
		{"kleppmann-pause over ACL and TLS", "kleppmann-pause", scenarios.Overrides{}, false, checker.Invalid},
		// Faults of the client's links act on TLS bytes passed through
		// untouched.
		{"delay through the link over TLS", "delay", scenarios.Overrides{}, false, checker.Invalid},
		{"partition of the link over TLS", "partition", scenarios.Overrides{}, false, checker.Valid},
		{"redlock, each node its own password", "baseline", scenarios.Overrides{Backend: ptr("redlock"), Duration: short}, false, checker.Valid},
		{"baseline over Sentinel with auth", "baseline", scenarios.Overrides{Duration: short}, true, checker.Valid},
		{"redis-py over TLS with a password", "redis-py-baseline", scenarios.Overrides{Duration: short}, false, checker.Valid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Servers, tc.o.ServersFile = ext, &file
			sc := builtin(t, tc.scenario, tc.o)
			if tc.sentinel {
				sc.Redis = backends.RedisSentinel
			}
			var printed bytes.Buffer
			store, tmp := t.TempDir(), t.TempDir()
			out, err := Run(context.Background(), sc, Options{Store: store, TempDir: tmp, Command: "test", Log: &printed})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if out.Results.Valid != tc.want {
				t.Fatalf("verdict %s, want %s:\n%s", out.Results.Valid, tc.want, out.Summary)
			}
			printed.WriteString(out.Summary)
			assertNoSecret(t, s.secrets, store, printed.String())
			assertNothingLeft(t, tmp)
		})
	}
}

// assertNoSecret greps every file under store, and what was printed, for
// every secret.
func assertNoSecret(t *testing.T, secrets []string, store, printed string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err // a directory, or store/latest (a link to one)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for _, v := range secrets {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds a password", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Errorf("the store holds %d files: the grep looked at nothing", files)
	}
	for _, v := range secrets {
		if strings.Contains(printed, v) {
			t.Errorf("the run printed a password")
		}
	}
}

// TestExternalCredentialsRefused: a wrong password is one line naming the
// server and what it said, before any client starts (no run in the
// store), never the harness's bad-input code; a variable that is not set
// is bad input naming it.
func TestExternalCredentialsRefused(t *testing.T) {
	s := startSecured(t)
	tests := []struct {
		name     string
		password string // "" leaves LT_ACL_PW unset
		badInput bool
		has      []string
	}{
		{"a wrong password", "not-the-password", false, []string{"redis " + s.tlsAddr + ": WRONGPASS"}},
		{"an unset variable", "", true, []string{"LT_ACL_PW is not set"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := s.serversFile(t, tc.password)
			if tc.password == "" {
				os.Unsetenv("LT_ACL_PW")
			}
			sc := builtin(t, "baseline", scenarios.Overrides{Servers: ptr(cluster.ServersExternal), ServersFile: &file})
			store := t.TempDir()
			var printed bytes.Buffer
			_, err := Run(context.Background(), sc, Options{Store: store, TempDir: t.TempDir(), Command: "test", Log: &printed})
			if err == nil {
				t.Fatal("the run went ahead")
			}
			msg := err.Error()
			if errors.Is(err, ErrBadInput) != tc.badInput {
				t.Errorf("%v: bad input %v, want %v", err, errors.Is(err, ErrBadInput), tc.badInput)
			}
			for _, h := range tc.has {
				if !strings.Contains(msg, h) || strings.Contains(msg, "\n") {
					t.Errorf("%q: want one line naming %q", msg, h)
				}
			}
			if tc.password != "" && strings.Contains(msg+printed.String(), tc.password) {
				t.Errorf("the error or the log holds the password: %q", msg)
			}
			if entries, _ := os.ReadDir(store); len(entries) > 0 {
				t.Errorf("the store holds %d entries: no run should be left", len(entries))
			}
			if strings.Contains(printed.String(), "client") && strings.Contains(printed.String(), "started") {
				t.Errorf("clients started:\n%s", printed.String())
			}
		})
	}
}

// TestLocalRunSecret: a local run's own Redis asks for a password of the
// run's; an adapter that logs its open request (the password in it) has
// it masked in client-N.log, and the password is nowhere in the store or
// in what the run printed.
func TestLocalRunSecret(t *testing.T) {
	requireRedis(t)
	spy := filepath.Join(t.TempDir(), "open.jsonl")
	t.Setenv("LT_SPY", spy)
	sc := builtin(t, "redis-py-baseline", scenarios.Overrides{Duration: ptr(time.Second), Clients: ptr(2),
		Exec: ptr("/usr/bin/python3 testdata/careless_adapter.py ../clients/python/redis_py_lock.py")})
	var printed bytes.Buffer
	store, tmp := t.TempDir(), t.TempDir()
	out, err := Run(context.Background(), sc, Options{Store: store, TempDir: tmp, Command: "test", Log: &printed})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if out.Results.Valid != checker.Valid {
		t.Fatalf("verdict %s, want valid:\n%s", out.Results.Valid, out.Summary)
	}
	b, err := os.ReadFile(spy)
	if err != nil {
		t.Fatal(err)
	}
	var open struct {
		Auth cluster.AuthSet `json:"auth"`
	}
	if err := json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &open); err != nil {
		t.Fatal(err)
	}
	a := open.Auth.For("redis", 0)
	if a == nil || a.Password == "" || a.Username != rediskind.User {
		t.Fatalf("the open request's auth.redis = %+v: the run's Redis asks for no password", a)
	}
	printed.WriteString(out.Summary)
	assertNoSecret(t, []string{a.Password}, store, printed.String())
	log, err := os.ReadFile(filepath.Join(out.Dir, "client-0.log"))
	if err != nil || !bytes.Contains(log, []byte(`"password":"[redacted]"`)) {
		t.Errorf("client-0.log does not show the adapter's logged password masked (%v):\n%s", err, log)
	}
	assertNothingLeft(t, tmp)
}
