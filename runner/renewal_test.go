package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/clientprotocol"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// The renewing test adapters (LT_TEST_ADAPTER=renew-hang or renew-open):
// SET NX PX with a token, a token-checked release, and a renewal every
// TTL/3 reported as extend events, as the articles' locks do it.
//
// renew-hang's renewal has no timeout of its own (a client library's
// default): cut from its server, it hangs until the cut heals, and then
// reports its outcome, after the release if the release came first.
// renew-open starts a renewal right after each grant and never completes
// it: an adapter that drops a renewal's outcome.
const (
	adapterRenewHang = "renew-hang"
	adapterRenewOpen = "renew-open"
)

// renewAdapter is the test child of the renewing modes.
func renewAdapter(mode string) {
	in := bufio.NewScanner(os.Stdin)
	var outMu sync.Mutex
	out := json.NewEncoder(os.Stdout)
	send := func(v any) {
		outMu.Lock()
		defer outMu.Unlock()
		_ = out.Encode(v)
	}
	var (
		rc, renewRC *redis.Client
		ttl         = time.Second
		timeout     = 500 * time.Millisecond
		mu          sync.Mutex
		tokens      = map[string]string{}        // key -> token held
		stops       = map[string]chan struct{}{} // key -> its renewal's stop
	)
	const release = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	const extend = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`
	renew := func(key, token string, stop chan struct{}) {
		for {
			select {
			case <-stop:
				return
			case <-time.After(ttl / 3):
			}
			send(map[string]any{"event": "extend", "key": key, "phase": "invoke"})
			start := time.Now()
			n, err := renewRC.Eval(context.Background(), extend, []string{"lock:" + key}, token, ttl.Milliseconds()).Int()
			switch {
			case err != nil:
				send(map[string]any{"event": "extend", "key": key, "type": "info", "error": err.Error()})
			case n == 0:
				send(map[string]any{"event": "extend", "key": key, "type": "fail", "error": "not held"})
				send(map[string]any{"event": "lost", "key": key})
				return
			default:
				send(map[string]any{"event": "extend", "key": key, "type": "ok", "lease_ms": (ttl - time.Since(start)).Milliseconds()})
			}
		}
	}
	for in.Scan() {
		var req clientprotocol.Inbound
		if err := json.Unmarshal(in.Bytes(), &req); err != nil || req.ID == nil {
			os.Exit(3)
		}
		reply := map[string]any{"id": *req.ID, "type": "ok"}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		switch req.Op {
		case "open":
			ttl, timeout = time.Duration(req.TTLMS)*time.Millisecond, time.Duration(req.TimeoutMS)*time.Millisecond
			opt := redis.Options{Addr: req.Servers.Servers["redis"][0], ContextTimeoutEnabled: true, MaxRetries: -1}
			if a := req.Auth.For("redis", 0); a != nil {
				opt.Username, opt.Password = a.Username, a.Password
			}
			rc = redis.NewClient(&opt)
			// The renewal's own connection waits as long as it takes.
			ropt := opt
			ropt.ContextTimeoutEnabled, ropt.ReadTimeout, ropt.WriteTimeout = false, -1, -1
			renewRC = redis.NewClient(&ropt)
			reply["abilities"] = []string{"extend"}
		case "acquire":
			token := fmt.Sprintf("%d-%d", req.Process, time.Now().UnixNano())
			start := time.Now()
			ok, err := rc.SetNX(ctx, "lock:"+req.Key, token, ttl).Result()
			switch {
			case err != nil:
				reply["type"], reply["error"] = "info", err.Error()
			case !ok:
				reply["type"], reply["error"] = "fail", "busy"
			default:
				reply["lease_ms"] = (ttl - time.Since(start)).Milliseconds()
				stop := make(chan struct{})
				mu.Lock()
				tokens[req.Key], stops[req.Key] = token, stop
				mu.Unlock()
				send(reply)
				if mode == adapterRenewOpen {
					send(map[string]any{"event": "extend", "key": req.Key, "phase": "invoke"})
				} else {
					go renew(req.Key, token, stop)
				}
				cancel()
				continue
			}
		case "release":
			mu.Lock()
			token, stop := tokens[req.Key], stops[req.Key]
			delete(tokens, req.Key)
			delete(stops, req.Key)
			mu.Unlock()
			if stop != nil {
				close(stop)
			}
			n, err := rc.Eval(ctx, release, []string{"lock:" + req.Key}, token).Int()
			switch {
			case err != nil:
				reply["type"], reply["error"] = "info", err.Error()
			case n == 0:
				reply["type"], reply["error"] = "fail", "not held"
			}
		}
		cancel()
		send(reply)
		if req.Op == "close" {
			os.Exit(0)
		}
	}
}

// TestRenewalNeverDelaysTheWork: a renewing lock whose work fits its lease,
// its holder cut from the server (the partition family): the renewal hangs
// while the holder works. The holder's write is not held back behind it
// (it comes within the lease, which the renewal never extended), so no
// other client is let in while it works: valid. For a program (exec) the
// renewal hangs until the cut heals, long after the write and release,
// and its late outcome is dropped, as run.log says; for redis-renew in
// the harness's process, its watchdog's extend hangs for the request
// timeout, set here past the lease.
func TestRenewalNeverDelaysTheWork(t *testing.T) {
	requireRedis(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		adapter string
		o       scenarios.Overrides
		log     string // what run.log says of the late outcome
	}{
		{"exec", adapterRenewHang, scenarios.Overrides{Exec: ptr(self)}, "after the client went on to its write"},
		{"redis-renew", "", scenarios.Overrides{Backend: ptr("redis-renew"), ClientMode: ptr(scenarios.ClientInproc), Timeout: ptr(1500 * time.Millisecond)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(adapterEnv, tc.adapter)
			sc := builtin(t, "partition", tc.o)
			out, _ := runIt(t, sc)
			ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			// Client 0's first hold: its grant, the write in it, and the
			// renewal that was open when the write began.
			var granted, wrote int64 = -1, -1
			superseded := false
			for _, op := range ops {
				if op.Process != 0 {
					continue
				}
				switch {
				case granted < 0 && op.F == history.Acquire && op.Type == history.OK:
					granted = op.Time
				case granted >= 0 && wrote < 0 && op.F == history.Write && op.Type == history.Invoke:
					wrote = op.Time
				case granted >= 0 && wrote < 0 && op.F == history.Extend && op.Type == history.Info && op.Error == history.SupersededError(history.Write):
					superseded = true
				}
			}
			if granted < 0 || wrote < 0 {
				t.Fatalf("client 0 was never granted, or never wrote:\n%s", out.Summary)
			}
			lease := sc.TTL.D()
			if late := time.Duration(wrote - granted); late >= lease {
				t.Errorf("client 0's write began %s after its grant, past its %s lease: it waited for its renewal", late, lease)
			}
			if !superseded {
				t.Errorf("no extend of client 0 was still open when it went on to its write (the renewal did not hang?)")
			}
			if tc.log != "" {
				runLog, err := os.ReadFile(filepath.Join(out.Dir, "run.log"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(runLog), tc.log) {
					t.Errorf("run.log does not say %q:\n%s", tc.log, runLog)
				}
			}
			if out.Results.Valid != checker.Valid {
				t.Fatalf("verdict %s, want valid:\n%s", out.Results.Valid, out.Summary)
			}
		})
	}
}

// TestExtendLeftOpen: an adapter that starts a renewal and never reports
// its outcome. The run ends (each open extend ends as info when its
// holder goes on) and names it: which client, which key, invoked when.
func TestExtendLeftOpen(t *testing.T) {
	requireRedis(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(adapterEnv, adapterRenewOpen)
	sc := builtin(t, "baseline", scenarios.Overrides{Duration: ptr(time.Second), Clients: ptr(2), Exec: ptr(self)})
	store, tmp := t.TempDir(), t.TempDir()
	out, err := Run(context.Background(), sc, Options{Store: store, TempDir: tmp, Command: "test"})
	if err != nil {
		logTails(t, store, err)
		t.Fatalf("run: %v", err)
	}
	assertNothingLeft(t, tmp)
	runLog, err := os.ReadFile(filepath.Join(out.Dir, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"client 0", "never completed", "extend of k0", "invoked at"}
	for where, text := range map[string]string{"run.log": string(runLog), "note": out.Results.Note, "warnings": strings.Join(out.Results.Warnings, "\n")} {
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("the %s does not say %q:\n%s", where, w, text)
			}
		}
	}
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Validate(context.Background(), ops); err != nil {
		t.Errorf("history: %v", err)
	}
}

// TestIdleFaultIsUnknown: a scripted fault that did nothing is no test of
// it. kill-session finds a Redis client's session by the name the
// harness's own clients give their connections; a program's connections
// carry none, so the kill finds no session ({"clients":[0],"sessions":[]}):
// the run is unknown, saying so, not valid.
func TestIdleFaultIsUnknown(t *testing.T) {
	requireRedis(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(adapterEnv, adapterRenewHang)
	out, _ := runIt(t, builtin(t, "kill-session", scenarios.Overrides{Exec: ptr(self)}))
	if out.Results.Valid != checker.Unknown {
		t.Errorf("verdict %s, want unknown:\n%s", out.Results.Valid, out.Summary)
	}
	for _, w := range []string{"kill-session process 0 on read", "did nothing", "found no session"} {
		if !strings.Contains(out.Results.Note, w) {
			t.Errorf("the note does not say %q: %s", w, out.Results.Note)
		}
	}
}

// TestUnexercisedFaultIsUnknown: a fault the clients could not work
// through is no test of it. In the failover scenario, a program that dials
// the primary it was given and cannot follow the Sentinels to the new one
// gets nothing but errors after the failover: the run is unknown, saying
// why, not valid.
func TestUnexercisedFaultIsUnknown(t *testing.T) {
	testenv.Require(t, "redis-server", "redis-sentinel")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(adapterEnv, adapterRenewHang)
	out, _ := runIt(t, builtin(t, "failover", scenarios.Overrides{Exec: ptr(self)}))
	if out.Results.Valid != checker.Unknown {
		t.Errorf("verdict %s, want unknown:\n%s", out.Results.Valid, out.Summary)
	}
	for _, w := range []string{"a planned fault was not put to the test", "after failover forced on acquire", "acquires failed with an error: none granted, refused busy or timed out"} {
		if !strings.Contains(out.Results.Note, w) {
			t.Errorf("the note does not say %q: %s", w, out.Results.Note)
		}
	}
}
