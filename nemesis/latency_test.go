package nemesis_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/nemesis"
)

// latency acts on links, proxies in front of real servers: its params,
// where it applies and its random params are tested here; its delay on a
// real server's replies is TestNemeses "latency" (runner/nemesis_test.go),
// the delay itself is cluster/links' tests, and its members topology is
// TestMembersTopologyValidate (members_test.go).

func slowBy(latency, jitter time.Duration) *nemesis.LatencyParams {
	return &nemesis.LatencyParams{Latency: nemesis.Duration(latency), Jitter: nemesis.Duration(jitter)}
}

// TestLatencyParams: a latency step needs a latency above 0, a jitter of
// 0 or more, a direction and a topology it knows, and the run's clients.
func TestLatencyParams(t *testing.T) {
	redis := nemesis.Shape{Clients: 2, Backend: "redis-token", Kinds: []string{"redis"}}
	with := func(f func(p *nemesis.LatencyParams)) *nemesis.LatencyParams {
		p := slowBy(time.Second, 0)
		f(p)
		return p
	}
	checkValidate(t, []validateCase{
		{"a latency", redis, slowBy(400*time.Millisecond, 0), "", ""},
		{"and a jitter", redis, slowBy(time.Second, 50*time.Millisecond), "", ""},
		{"upstream, clients", redis, with(func(p *nemesis.LatencyParams) { p.Direction, p.Topology = "upstream", "clients" }), "", ""},
		{"one client, one server", redis, with(func(p *nemesis.LatencyParams) { p.Proc, p.Servers = proc(1), []string{"A"} }), "", ""},
		{"no latency", redis, slowBy(0, 0), "latency", "needs `latency:` above 0 (e.g. 2s), not 0s"},
		{"a negative latency", redis, slowBy(-time.Second, 0), "latency", "not -1s"},
		{"a negative jitter", redis, slowBy(time.Second, -time.Millisecond), "jitter", "jitter must be 0 or more, not -1ms"},
		{"an unknown direction", redis, with(func(p *nemesis.LatencyParams) { p.Direction = "sideways" }), "direction", "sideways"},
		{"an unknown topology", redis, with(func(p *nemesis.LatencyParams) { p.Topology = "halves" }), "topology", `unknown latency topology "halves" (clients, members)`},
		{"a client past the last", redis, with(func(p *nemesis.LatencyParams) { p.Clients = []int{0, 2} }), "clients", "no client process 2"},
		{"an empty server name", redis, with(func(p *nemesis.LatencyParams) { p.Servers = []string{""} }), "servers", "empty server name"},
	})
	p := with(func(p *nemesis.LatencyParams) {
		p.Proc, p.Servers, p.Direction, p.Jitter = proc(0), []string{"B"}, "both", nemesis.Duration(10*time.Millisecond)
	})
	if got, want := p.String(), "process 0, servers [B], direction both, latency 1s, jitter 10ms"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestLatencyDecode: a step's latency keys decode, durations as YAML
// writes them.
func TestLatencyDecode(t *testing.T) {
	p, err := decode(t, "latency", "process: 0\nlatency: 400ms\njitter: 0\ndirection: upstream\n")
	if err != nil {
		t.Fatal(err)
	}
	want := &nemesis.LatencyParams{ClientSet: nemesis.ClientSet{Proc: proc(0)}, Latency: nemesis.Duration(400 * time.Millisecond), Direction: "upstream"}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("decoded %+v, want %+v", p, want)
	}
	if _, err := decode(t, "latency", "latency: [1s]\n"); err == nil || !strings.Contains(err.Error(), "line 1: bad duration") {
		t.Errorf("latency: [1s]: %v", err)
	}
}

// TestLatencyApplies: latency needs a server to talk to, and routes the
// run's traffic through links.
func TestLatencyApplies(t *testing.T) {
	checkApplies(t, "latency", slowBy(time.Second, 0), []appliesCase{
		{"redis", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}}, ""},
		{"someone else's servers", nemesis.Shape{Clients: 1, Backend: "redis-token", Kinds: []string{"redis"}, External: true, Uncontrolled: []string{"redis 10.0.0.5:6379"}}, ""},
		{"in-process", nemesis.Shape{Clients: 1, Backend: "mutex"}, "latency does not apply to mutex: it talks to no server"},
	})
	if !nemesis.UsesLinks([]nemesis.Step{{Fault: "latency"}}, nil) {
		t.Error("a latency step does not ask for links")
	}
}

// TestLatencyStartWithoutLinks: with no links to slow (a run whose
// schedule was not seen to need them), or a server the run does not have,
// the step is ErrTarget, not a silent no-op.
func TestLatencyStartWithoutLinks(t *testing.T) {
	env := fakeEnv(t, 2, &fakeServer{name: "redis-0"})
	for _, tc := range []struct {
		name string
		p    *nemesis.LatencyParams
		want string
	}{
		{"no links", slowBy(time.Second, 0), "links are not enabled"},
		{"no server B", &nemesis.LatencyParams{ServerSet: servers("B"), Latency: nemesis.Duration(time.Second)}, `no server "B"`},
	} {
		_, heal, err := lookup(t, "latency").Start(context.Background(), env, tc.p, time.Second)
		if !errors.Is(err, nemesis.ErrTarget) || !strings.Contains(err.Error(), tc.want) || heal != nil {
			t.Errorf("%s: %v, want ErrTarget saying %q", tc.name, err, tc.want)
		}
	}
}

// TestLatencyRandomParams: a random latency slows one client's replies by
// 50ms to 500ms, jittered by 20ms, the same from the same seed.
func TestLatencyRandomParams(t *testing.T) {
	env := fakeEnv(t, 3)
	for _, p := range randomParams(t, "latency", env, 9, 40) {
		l, ok := p.(*nemesis.LatencyParams)
		if !ok {
			t.Fatalf("params %T", p)
		}
		if err := l.Validate(nemesis.Shape{Clients: 3, Kinds: []string{"redis"}}); err != nil {
			t.Errorf("%v does not validate: %v", l, err)
		}
		if d := l.Latency.D(); d < 50*time.Millisecond || d >= 500*time.Millisecond || l.Jitter.D() != 20*time.Millisecond || l.Direction != "downstream" || l.EventProcess() < 0 {
			t.Errorf("%v: want one client's replies slowed by [50ms, 500ms), jitter 20ms", l)
		}
	}
}
