package nemesis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/nemesis"
)

// lost-reply acts on links, proxies in front of real servers: its params,
// where it applies and its random params are tested here; a reply lost by
// a real server's link is TestBuiltinScenarios/lost-reply
// (runner/builtin_test.go, scenarios/builtin/lost-reply.yaml), and the
// link's part is TestLoseOneReply (cluster/links).

func lose(once bool, clients ...int) *nemesis.LostReplyParams {
	p := &nemesis.LostReplyParams{Once: once}
	p.Clients = clients
	return p
}

// TestLostReplyParams: the clients are the run's; the plan line says
// once.
func TestLostReplyParams(t *testing.T) {
	two := nemesis.Shape{Clients: 2, Backend: "redis-token", Kinds: []string{"redis"}}
	withProc := lose(false)
	withProc.Proc = proc(2)
	checkValidate(t, []validateCase{
		{"every client", two, lose(false), "", ""},
		{"one client, once", two, lose(true, 1), "", ""},
		{"a client past the last", two, lose(false, 0, 2), "clients", "no client process 2 (clients are 0 to 1)"},
		{"a process past the last", two, withProc, "process", "no client process 2"},
	})
	for _, tc := range []struct {
		p    *nemesis.LostReplyParams
		want string
	}{
		{lose(false, 1), "process 1"},
		{lose(true, 1), "process 1 once"},
		{lose(true), "once"},
		{lose(false), ""},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	p, err := decode(t, "lost-reply", "process: 1\nonce: true\n")
	if err != nil {
		t.Fatal(err)
	}
	if lp := p.(*nemesis.LostReplyParams); !lp.Once || lp.EventProcess() != 1 {
		t.Errorf("decoded %+v", lp)
	}
}

// TestLostReplyApplies: a reply is lost only where a server replies, and
// the run's traffic goes through links for it.
func TestLostReplyApplies(t *testing.T) {
	checkApplies(t, "lost-reply", lose(false, 0), []appliesCase{
		{"postgres", nemesis.Shape{Clients: 1, Backend: "pg-advisory", Kinds: []string{"postgres"}}, ""},
		{"in-process", nemesis.Shape{Clients: 1, Backend: "mutex"}, "lost-reply does not apply to mutex: it talks to no server"},
	})
	if !nemesis.UsesLinks(nil, &nemesis.Random{Faults: []string{"lost-reply"}}) {
		t.Error("a random lost-reply does not ask for links")
	}
	if start, stop := opNames(t, "lost-reply"); start != "start-lost-reply" || stop != "stop-lost-reply" {
		t.Errorf("ops %q, %q", start, stop)
	}
}

// TestLostReplyStartWithoutLinks: with no links to arm, the step is
// ErrTarget, not a silent no-op.
func TestLostReplyStartWithoutLinks(t *testing.T) {
	env := fakeEnv(t, 2, &fakeServer{name: "redis-0"})
	_, heal, err := lookup(t, "lost-reply").Start(context.Background(), env, lose(true, 1), time.Second)
	if !errors.Is(err, nemesis.ErrTarget) || !strings.Contains(err.Error(), "links are not enabled") || heal != nil {
		t.Errorf("Start: %v, want ErrTarget saying links are not enabled", err)
	}
}

// TestLostReplyRandomParams: a random lost-reply hits one client of the
// run, every reply while it lasts (not once), the same from the same seed.
func TestLostReplyRandomParams(t *testing.T) {
	env := fakeEnv(t, 4)
	seen := map[int]bool{}
	for _, p := range randomParams(t, "lost-reply", env, 2, 40) {
		l := p.(*nemesis.LostReplyParams)
		if err := l.Validate(nemesis.Shape{Clients: 4}); err != nil || l.Once || len(l.List()) != 1 {
			t.Errorf("%+v (%v): want one client of 4, not once", l, err)
		}
		seen[l.EventProcess()] = true
	}
	if len(seen) != 4 {
		t.Errorf("40 random steps hit clients %v, want all 4", seen)
	}
}
