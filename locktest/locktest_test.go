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
	"sync/atomic"
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
	case "defaults":
		locktest.Run(t, locktest.Suite{New: newTokenLock, Kinds: strings.Fields(os.Getenv("LOCKTEST_KINDS"))})
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
	shared, own := shortBaseline(t, "shared", ""), shortBaseline(t, "own", "persistence: true\n")
	locktest.Run(t, locktest.Suite{New: newLock, Scenarios: []string{shared, own}})
	locktest.Run(t, locktest.Suite{New: newLock, Scenarios: []string{shared}, InProcess: true})
}

// shortBaseline writes the baseline scenario cut to 1s and 2 clients, plus
// extra, as NAME.yaml (its subtest's name) in a temporary directory.
func shortBaseline(t *testing.T, name, extra string) string {
	t.Helper()
	b, err := os.ReadFile("../scenarios/builtin/baseline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	short := strings.NewReplacer("duration: 5s", "duration: 1s", "clients: 5", "clients: 2").Replace(string(b))
	file := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(file, []byte(short+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestScenariosListWhatRuns: locktest.Scenarios names exactly the
// subtests Run makes for a suite that names none (the defaults for its
// kinds), in order. The suite runs in a test binary of its own with no
// server program on PATH, so that each subtest skips at once.
func TestScenariosListWhatRuns(t *testing.T) {
	if os.Getenv(locktest.EnvServers) != "" {
		t.Skip("servers are not local here")
	}
	for _, kinds := range [][]string{nil, {"etcd"}, {"zookeeper"}} {
		want, err := locktest.Scenarios(locktest.Suite{Kinds: kinds})
		if err != nil || len(want) == 0 {
			t.Fatalf("Scenarios for %v: %v, %v", kinds, want, err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestFailureSpeaks$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "PATH="+t.TempDir(), "LOCKTEST_FAILDEMO=defaults", "LOCKTEST_KINDS="+strings.Join(kinds, " "))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var ran []string
		for _, line := range strings.Split(string(out), "\n") {
			if _, name, ok := strings.Cut(strings.TrimSpace(line), "--- SKIP: TestFailureSpeaks/"); ok {
				ran = append(ran, strings.Fields(name)[0])
			}
		}
		if !slices.Equal(ran, want) {
			t.Errorf("kinds %v: Run ran %v; Scenarios says %v", kinds, ran, want)
		}
	}
	all := locktest.BuiltinScenarios()
	for _, n := range []string{"baseline", "delay", "failover-leader", "kleppmann-pause"} {
		if !slices.Contains(all, n) {
			t.Errorf("BuiltinScenarios %v lacks %s", all, n)
		}
	}
}

// TestKeepPassingReport: with LOCKTEST_KEEP set, a passing subtest's
// report is kept, and its Result and log say where.
func TestKeepPassingReport(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
	t.Setenv(locktest.EnvStore, t.TempDir())
	t.Setenv(locktest.EnvKeep, "1")
	res := locktest.Run(t, locktest.Suite{New: newTokenLock, Scenarios: []string{shortBaseline(t, "kept", "")}})
	r := res[0]
	if r == nil || !r.Met || r.Dir == "" {
		t.Fatalf("a passing run with %s set: %+v; want it met, with its report's directory", locktest.EnvKeep, r)
	}
	for _, f := range []string{"index.html", "history.jsonl", "results.json"} {
		if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
			t.Errorf("the passing run's %s is not kept: %v", f, err)
		}
	}
}

// contractLock is tokenLock checking, as it is called, what the package
// doc promises a Lock: one call at a time; NewLock's context is cancelled
// once it returns; Acquire's context has the request timeout as its
// deadline and is cancelled once Acquire returns; after a grant the next
// call is Release (even after Lost, which it calls inside Acquire on every
// other grant: each makes a lost op), and no Release without one.
// What breaks a promise is appended to the file LOCKTEST_CONTRACT names;
// "lost" to LOCKTEST_CONTRACT.lost for each Lost called inside Acquire.
type contractLock struct {
	*tokenLock
	busy    atomic.Int32
	newCtx  context.Context
	last    context.Context // the last Acquire's
	held    bool
	grants  int
	breakOf func(string)
	lost    func()
}

func newContractLock(ctx context.Context, cfg locktest.Config) (locktest.Lock, error) {
	l, err := newTokenLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	log := os.Getenv("LOCKTEST_CONTRACT")
	appendTo := func(file, line string) {
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			_ = f.Close()
		}
	}
	return &contractLock{tokenLock: l.(*tokenLock), newCtx: ctx,
		breakOf: func(what string) { appendTo(log, fmt.Sprintf("client %d: %s", cfg.Process, what)) },
		lost:    func() { appendTo(log+".lost", mode()) }}, nil
}

// mode is "process" in a client process, else "inproc".
func mode() string {
	if os.Getenv("LOCKTEST_CHILD") != "" {
		return "process"
	}
	return "inproc"
}

// enter checks that no other call is in flight and that the last
// Acquire's context is done; leave ends the call.
func (l *contractLock) enter(call string, ctx context.Context) {
	if l.busy.Add(1) != 1 {
		l.breakOf(call + " while another call was in flight")
	}
	if l.newCtx.Err() != context.Canceled {
		l.breakOf(fmt.Sprintf("%s: NewLock's context was not cancelled: %v", call, l.newCtx.Err()))
	}
	if l.last != nil && l.last.Err() != context.Canceled {
		l.breakOf(fmt.Sprintf("%s: the last Acquire's context was not cancelled: %v", call, l.last.Err()))
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > l.cfg.Timeout {
		l.breakOf(fmt.Sprintf("%s: its context's deadline %v (set %v) is not within the request timeout %s", call, d, ok, l.cfg.Timeout))
	}
}

func (l *contractLock) Acquire(ctx context.Context, key string) (locktest.Grant, error) {
	l.enter("Acquire", ctx)
	defer l.busy.Add(-1)
	if l.held {
		l.breakOf("Acquire while holding a grant Release was not called for")
	}
	l.last = ctx
	g, err := l.tokenLock.Acquire(ctx, key)
	if err == nil {
		l.held = true
		if l.grants++; l.grants%2 == 1 {
			l.cfg.Lost(key) // given up before Acquire returns: it counts
			l.lost()
		}
	}
	return g, err
}

func (l *contractLock) Release(ctx context.Context, key string) error {
	l.enter("Release", ctx)
	defer l.busy.Add(-1)
	if !l.held {
		l.breakOf("Release with no grant")
	}
	l.held = false
	return l.tokenLock.Release(ctx, key)
}

// TestLockContract runs contractLock with clients as processes and
// in-process: no promise of the package doc about how a Lock is called
// is broken.
func TestLockContract(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
	log := os.Getenv("LOCKTEST_CONTRACT") // a client process's: its test's
	if log == "" {
		log = filepath.Join(t.TempDir(), "broken.txt")
		t.Setenv("LOCKTEST_CONTRACT", log)
	}
	t.Setenv(locktest.EnvStore, t.TempDir())
	t.Setenv(locktest.EnvKeep, "1")
	file := shortBaseline(t, "contract", "")
	res := locktest.Run(t, locktest.Suite{New: newContractLock, Scenarios: []string{file}})
	res = append(res, locktest.Run(t, locktest.Suite{New: newContractLock, Scenarios: []string{file}, InProcess: true})...)
	if b, err := os.ReadFile(log); err == nil {
		t.Errorf("promises broken:\n%s", b)
	}
	// A Lost reaches the client as a notice, after the grant: one that
	// comes after the client began its release is dropped, so a few
	// may not count; most must.
	calls, _ := os.ReadFile(log + ".lost")
	for i, mode := range []string{"process", "inproc"} {
		if res[i] == nil {
			t.Fatal("a subtest was skipped")
		}
		h, err := os.ReadFile(filepath.Join(res[i].Dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		n, recorded := strings.Count(string(calls), mode), strings.Count(string(h), `"type":"ok","f":"lost"`)
		if n == 0 || recorded > n || recorded*2 <= n {
			t.Errorf("%s: Lost called inside Acquire %d times; %d lost ops recorded", mode, n, recorded)
		}
	}
}
