package nemesis_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/nemesis"
)

// A client clock is the client's clientfault.Clock, in this process: that
// effect is tested here. A Redis server's clock jump (its keys' TTLs cut)
// needs a Redis server: TestNemeses "server clock" (runner/nemesis_test.go)
// runs it.

func clockOn(clients []int, jump time.Duration, rate float64) *nemesis.ClockParams {
	p := &nemesis.ClockParams{Jump: nemesis.Duration(jump), Rate: rate}
	p.Clients = clients
	return p
}

// TestClockParams: a clock step needs a jump or a rate; a server clock
// can only jump; the rate is positive; the clients are the run's.
func TestClockParams(t *testing.T) {
	three := nemesis.Shape{Clients: 3, Lease: true}
	server := func(jump time.Duration, rate float64, names ...string) *nemesis.ClockParams {
		return &nemesis.ClockParams{ServerSet: servers(names...), Jump: nemesis.Duration(jump), Rate: rate}
	}
	checkValidate(t, []validateCase{
		{"a jump", three, clockOn([]int{0}, time.Second, 0), "", ""},
		{"a rate", three, clockOn([]int{2}, 0, 1.5), "", ""},
		{"a jump back and a rate", three, clockOn([]int{0, 1}, -3*time.Second, 0.5), "", ""},
		{"a server jump", three, server(time.Second, 0, "A"), "", ""},
		{"nothing to do", three, clockOn([]int{0}, 0, 0), "", "needs `jump:` and/or `rate:`"},
		{"a server rate", three, server(time.Second, 1.5, "A"), "rate", "a server clock can only jump"},
		{"a negative rate", three, clockOn([]int{0}, 0, -1), "rate", "rate must be positive, not -1"},
		{"a client past the last", three, clockOn([]int{3}, time.Second, 0), "clients", "no client process 3 (clients are 0 to 2)"},
		{"an empty server name", three, server(time.Second, 0, " "), "servers", "empty server name"},
	})
	p := &nemesis.ClockParams{ClientSet: nemesis.ClientSet{Proc: proc(0)}, Jump: nemesis.Duration(5 * time.Second), Rate: 1.5}
	if got, want := p.String(), "process 0, jump 5s, rate 1.5"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestClockDecode: a step's keys decode into clock's params; a jump is a
// duration as YAML writes it, and anything else is refused naming its
// line.
func TestClockDecode(t *testing.T) {
	p, err := decode(t, "clock", "process: 2\njump: -3s\nrate: 1.5\n")
	if err != nil {
		t.Fatal(err)
	}
	want := &nemesis.ClockParams{ClientSet: nemesis.ClientSet{Proc: proc(2)}, Jump: nemesis.Duration(-3 * time.Second), Rate: 1.5}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("decoded %+v, want %+v", p, want)
	}
	if _, err := decode(t, "clock", "process: 0\njump: 3 seconds\n"); err == nil || !strings.Contains(err.Error(), `line 2: bad duration "3 seconds"`) {
		t.Errorf("jump: 3 seconds: %v", err)
	}
}

// TestClockApplies: a clock matters only where a grant carries a lease.
func TestClockApplies(t *testing.T) {
	checkApplies(t, "clock", clockOn([]int{0}, time.Second, 0), []appliesCase{
		{"a lease", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}, Lease: true}, ""},
		{"an in-process lease", nemesis.Shape{Clients: 1, Backend: "lease-mutex", Lease: true}, ""},
		{"no lease", nemesis.Shape{Clients: 1, Backend: "pg-advisory", Kinds: []string{"postgres"}}, "clock does not apply to pg-advisory: it has no lease"},
	})
}

// TestClockStartClients: a client clock step jumps and sets the rate of
// the target clients' clocks, and only theirs, until the heal resets them.
func TestClockStartClients(t *testing.T) {
	ctx := context.Background()
	env := fakeEnv(t, 3)
	type state struct {
		offset time.Duration
		rate   float64
	}
	var mu sync.Mutex
	last := map[int]state{}
	for i, c := range env.Clocks {
		c.OnChange(func(offset time.Duration, rate float64) {
			mu.Lock()
			defer mu.Unlock()
			last[i] = state{offset, rate}
		})
	}
	now := func() map[int]state {
		mu.Lock()
		defer mu.Unlock()
		out := map[int]state{}
		for k, v := range last {
			out[k] = v
		}
		return out
	}
	p := clockOn([]int{0, 2}, 5*time.Second, 1.5)
	val, heal, err := lookup(t, "clock").Start(ctx, env, p, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(val["clients"], []int{0, 2}) || val["jump_ms"] != int64(5000) || val["rate"] != 1.5 || val["ms"] != int64(1000) {
		t.Errorf("start value %v", val)
	}
	got := now()
	for _, i := range []int{0, 2} {
		// The jump comes first, then the rate: the offset is at least the
		// jump (the rate adds a little as the clock runs).
		if s, ok := got[i]; !ok || s.offset < 5*time.Second || s.rate != 1.5 {
			t.Errorf("client %d clock: %+v (changed %v), want 5s ahead at rate 1.5", i, s, ok)
		}
	}
	if s, ok := got[1]; ok {
		t.Errorf("client 1's clock changed: %+v", s)
	}
	if _, err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	got = now()
	for _, i := range []int{0, 2} {
		if got[i] != (state{0, 1}) {
			t.Errorf("client %d clock after the heal: %+v, want reset", i, got[i])
		}
	}
	// A clock the run does not have.
	if _, _, err := lookup(t, "clock").Start(ctx, env, clockOn([]int{3}, time.Second, 0), time.Second); !errors.Is(err, nemesis.ErrTarget) {
		t.Errorf("client 3 of 3: %v, want ErrTarget", err)
	}
}

// TestClockStartNotRedis: only a Redis server's clock can jump; another
// server named is ErrTarget, and so is a server the run does not have.
func TestClockStartNotRedis(t *testing.T) {
	ctx := context.Background()
	env := fakeEnv(t, 1, &fakeServer{name: "etcd-0"})
	for _, tc := range []struct{ name, want string }{
		{"A", "etcd-0 is not a Redis server"},
		{"B", `no server "B" (servers: A=etcd-0)`},
	} {
		p := &nemesis.ClockParams{ServerSet: servers(tc.name), Jump: nemesis.Duration(time.Second)}
		_, heal, err := lookup(t, "clock").Start(ctx, env, p, time.Second)
		if !errors.Is(err, nemesis.ErrTarget) || !strings.Contains(err.Error(), tc.want) || heal != nil {
			t.Errorf("servers [%s]: %v, want ErrTarget saying %q", tc.name, err, tc.want)
		}
	}
}

// TestClockRandomParams: with no Redis server, a random clock step jumps
// one client's clock by less than 2s either way and sets a rate within
// 20% of true time; the same seed draws the same.
func TestClockRandomParams(t *testing.T) {
	env := fakeEnv(t, 3, &fakeServer{name: "etcd-0"})
	for _, p := range randomParams(t, "clock", env, 5, 40) {
		c, ok := p.(*nemesis.ClockParams)
		if !ok {
			t.Fatalf("params %T", p)
		}
		if err := c.Validate(nemesis.Shape{Clients: 3, Lease: true}); err != nil {
			t.Errorf("%v does not validate: %v", c, err)
		}
		if len(c.Servers) > 0 || c.EventProcess() < 0 {
			t.Errorf("%v: want one client, no server", c)
		}
		if j := c.Jump.D(); j < -2*time.Second || j >= 2*time.Second {
			t.Errorf("%v: jump outside [-2s, 2s)", c)
		}
		if c.Rate < 0.8 || c.Rate > 1.2 {
			t.Errorf("%v: rate outside [0.8, 1.2]", c)
		}
	}
}
