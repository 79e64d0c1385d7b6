package locktest_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/locktest"
)

func TestMain(m *testing.M) { locktest.Main(m) }

// tokenLock is SET NX PX with a random token, released by compare-and-delete.
type tokenLock struct {
	rdb   *redis.Client
	cfg   locktest.Config
	token string
}

var del = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

func newTokenLock(ctx context.Context, cfg locktest.Config) (locktest.Lock, error) {
	cr := cfg.Credentials("redis", 0)
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Servers.Redis[0], Username: cr.Username, Password: cr.Password,
		MaxRetries: -1, ContextTimeoutEnabled: true})
	return &tokenLock{rdb: rdb, cfg: cfg}, nil
}

func (l *tokenLock) Acquire(ctx context.Context, key string) (locktest.Grant, error) {
	start := time.Now()
	l.token = rand.Text()
	ok, err := l.rdb.SetNX(ctx, key, l.token, l.cfg.TTL).Result()
	if err == nil && !ok {
		err = locktest.ErrBusy
	}
	return locktest.Grant{Lease: l.cfg.TTL*9/10 - time.Since(start)}, err
}

func (l *tokenLock) Release(ctx context.Context, key string) error {
	n, err := del.Run(ctx, l.rdb, []string{key}, l.token).Int()
	if err == nil && n == 0 {
		err = locktest.ErrNotHeld
	}
	return err
}

func (l *tokenLock) Close() error { return l.rdb.Close() }

// TestTokenLock: baseline passes the claim; under Kleppmann's pause the
// token lock shows a stale holder, so the claim "safe" fails (less safe)
// and "stale holder possible" holds.
func TestTokenLock(t *testing.T) {
	res := locktest.Run(t, locktest.Suite{New: newTokenLock, Claim: locktest.StaleHolderPossible,
		Scenarios: []string{"baseline", "kleppmann-pause"}})
	if res[1] == nil {
		return // skipped: no servers here
	}
	ok, why := res[1].Meets(locktest.Safe)
	if ok || !strings.HasPrefix(why, "less safe than the claim \"safe\"") {
		t.Errorf("kleppmann-pause judged against the claim safe: met %v, %q; want it failed as less safe", ok, why)
	}
	if ok, why := res[0].Meets(locktest.Safe); !ok {
		t.Errorf("baseline judged against the claim safe: %s", why)
	}
}

// TestInProcess runs the same lock with in-process clients: Kleppmann's
// pause stops client 0 at its step, which is enough to catch a token lock.
func TestInProcess(t *testing.T) {
	locktest.Run(t, locktest.Suite{New: newTokenLock, Claim: locktest.StaleHolderPossible, InProcess: true,
		Scenarios: []string{"kleppmann-pause"}})
}

// TestFailureSpeaks runs a claim the lock does not meet in a test binary
// of its own and reads what the failure says: which way the verdict
// differs, the violation, the seed, the command that repeats it and the
// report, which is kept.
func TestFailureSpeaks(t *testing.T) {
	switch os.Getenv("LOCKTEST_FAILDEMO") {
	case "claim":
		locktest.Run(t, locktest.Suite{New: newTokenLock, Claim: locktest.Safe, Scenarios: []string{"kleppmann-pause"}})
		return
	case "new":
		locktest.Run(t, locktest.Suite{New: func(context.Context, locktest.Config) (locktest.Lock, error) {
			return nil, errors.New("no such lock today")
		}, Scenarios: []string{"kleppmann-pause"}})
		return
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
	store := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailureSpeaks$", "-test.count=1", "-locktest.seed=7")
	cmd.Env = append(os.Environ(), "LOCKTEST_FAILDEMO=claim", locktest.EnvStore+"="+store)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the failing test binary: %v, want exit 1\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		`kleppmann-pause: less safe than the claim "safe"`,
		"INVALID", "stale holder",
		"seed 7; repeat with: go test -run '^TestFailureSpeaks$/^kleppmann-pause$' -locktest.seed=7",
		"full report: " + store,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the failure does not say %q:\n%s", want, text)
		}
	}
	i := strings.Index(text, "full report: ")
	if i < 0 {
		return
	}
	report := strings.Fields(text[i+len("full report: "):])[0]
	if _, err := os.Stat(report); err != nil {
		t.Errorf("the failing run's report is not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(report), "history.jsonl")); err != nil {
		t.Errorf("the failing run's history is not kept: %v", err)
	}
}

// TestBaselineOverhead measures what a baseline subtest (5 clients, 3s)
// costs beyond its scenario span, servers already up: set
// LOCKTEST_MEASURE to the number of runs (it is not part of make test).
func TestBaselineOverhead(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LOCKTEST_MEASURE"))
	if n <= 0 {
		t.Skip("set LOCKTEST_MEASURE=N to measure N baseline subtests")
	}
	b, err := os.ReadFile("../scenarios/builtin/baseline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "baseline3s.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), "duration: 5s", "duration: 3s", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	suite := locktest.Suite{New: newTokenLock, Scenarios: []string{file}}
	locktest.Run(t, suite) // starts the shared servers
	var over []time.Duration
	for range n {
		start := time.Now()
		locktest.Run(t, suite)
		over = append(over, time.Since(start)-3*time.Second)
	}
	slices.Sort(over)
	t.Logf("baseline subtest (5 clients, 3s) beyond its span, servers up: median %s over %d runs (all: %v)", over[len(over)/2], n, over)
}

// TestSkipsWithoutServers runs TestTokenLock where no server program is on
// PATH: its subtests skip, saying what to install.
func TestSkipsWithoutServers(t *testing.T) {
	if os.Getenv(locktest.EnvServers) != "" {
		t.Skip("servers are not local here")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTokenLock$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"--- SKIP: TestTokenLock/kleppmann-pause", "install the Debian package redis-server (or run them in containers: LOCKTEST_SERVERS=docker)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
}

// TestNewLockFails: a constructor's error fails the subtest, naming it.
func TestNewLockFails(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailureSpeaks$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOCKTEST_FAILDEMO=new", locktest.EnvStore+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "no such lock today") {
		t.Fatalf("a constructor that fails: %v, want exit 1 naming its error:\n%s", err, out)
	}
}

// TestServersAskForCredentials: the servers locktest starts ask for
// credentials, as the CLI's do, so a lock that ignores Config.Auth fails
// here as it would there. Each client checks, before it builds its lock,
// that a connection without credentials is refused NOAUTH; the lock then
// logs in with Config.Credentials. On the shared servers, with clients as
// processes and in-process, and on a run's own servers (persistence: a
// scenario that cannot share).
func TestServersAskForCredentials(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
	newLock := func(ctx context.Context, cfg locktest.Config) (locktest.Lock, error) {
		anon := redis.NewClient(&redis.Options{Addr: cfg.Servers.Redis[0], MaxRetries: -1})
		err := anon.Ping(ctx).Err()
		_ = anon.Close()
		if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			return nil, fmt.Errorf("a connection without credentials was answered %v, want NOAUTH", err)
		}
		if cr := cfg.Credentials("redis", 0); cr.Password == "" || len(cfg.Auth["redis"]) == 0 {
			return nil, fmt.Errorf("no credentials given for redis: %+v", cfg.Auth)
		}
		return newTokenLock(ctx, cfg)
	}
	b, err := os.ReadFile("../scenarios/builtin/baseline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	short := strings.NewReplacer("duration: 5s", "duration: 1s", "clients: 5", "clients: 2").Replace(string(b))
	dir := t.TempDir()
	shared, own := filepath.Join(dir, "shared.yaml"), filepath.Join(dir, "own.yaml")
	if err := os.WriteFile(shared, []byte(short), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte(short+"persistence: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	locktest.Run(t, locktest.Suite{New: newLock, Scenarios: []string{shared, own}})
	locktest.Run(t, locktest.Suite{New: newLock, Scenarios: []string{shared}, InProcess: true})
}
