package nemesis_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
)

// The helpers of the per-fault tests (clock_test.go, kill_test.go, ...):
// a fault is tested there as far as it can be without a server — its
// params, where it applies, its op names, its random params, and what it
// does to servers that no process stands behind (fakeServer). What a fault
// does to a real server is tested by the integration tests each file names.

// errFake is the error a fakeServer returns for a call it is told to fail.
var errFake = errors.New("fake: refused")

// fakeServer is a server that no process stands behind: it records the
// calls a fault makes on it (kill, restart, pause, resume) and can be told
// to fail one.
type fakeServer struct {
	name string
	// fail is the call that returns errFake ("kill", "pause", ...).
	fail string

	mu    sync.Mutex
	calls []string
}

func (s *fakeServer) Name() string                   { return s.name }
func (s *fakeServer) Addr() string                   { return "fake:" + s.name }
func (s *fakeServer) Stop(ctx context.Context) error { return nil }
func (s *fakeServer) LogPath() string                { return "" }

func (s *fakeServer) call(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, name)
	if s.fail == name {
		return errFake
	}
	return nil
}

// Calls are the calls made on s, in order.
func (s *fakeServer) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// killable is a fakeServer that kill -9 can crash (cluster.Killer).
type killable struct{ *fakeServer }

func (s killable) Kill(ctx context.Context) error    { return s.call("kill") }
func (s killable) Restart(ctx context.Context) error { return s.call("restart") }

// pausable is a fakeServer that SIGSTOP can freeze (cluster.Pauser).
type pausable struct{ *fakeServer }

func (s pausable) Pause(ctx context.Context) error  { return s.call("pause") }
func (s pausable) Resume(ctx context.Context) error { return s.call("resume") }

// sessionServer is a fakeServer that ends client sessions: it returns
// sessions (and err) and records the clients it was asked for.
type sessionServer struct {
	*fakeServer
	sessions []map[string]any
	err      error
	asked    *[][]int
}

func (s sessionServer) KillSessions(ctx context.Context, clients []int) ([]map[string]any, error) {
	*s.asked = append(*s.asked, clients)
	return s.sessions, s.err
}

// fakeEnv is an Env of n clients (their gates and clocks) and a cluster
// that holds ss, in start order ("A" is ss[0]), with no link enabled.
func fakeEnv(t *testing.T, n int, ss ...cluster.Server) *nemesis.Env {
	t.Helper()
	cl, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	for _, s := range ss {
		cl.AddServer(s)
	}
	clocks := make([]*clientfault.Clock, n)
	for i := range clocks {
		clocks[i] = clientfault.NewClock()
	}
	return &nemesis.Env{Gates: gates(n), Clocks: clocks, Cluster: cl}
}

// lookup returns the fault registered under name.
func lookup(t *testing.T, name string) nemesis.Fault {
	t.Helper()
	f, err := nemesis.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// opNames are the names of the ops a fault records: start-<name> and
// stop-<name> unless it names them (nemesis.OpNamer).
func opNames(t *testing.T, name string) (start, stop string) {
	t.Helper()
	if n, ok := lookup(t, name).(nemesis.OpNamer); ok {
		return n.OpNames(name)
	}
	return "start-" + name, "stop-" + name
}

// allowsZero reports whether the fault may last no time at all.
func allowsZero(t *testing.T, name string) bool {
	t.Helper()
	z, ok := lookup(t, name).(nemesis.ZeroDuration)
	return ok && z.AllowsZeroDuration()
}

// randomParams draws the fault's random params n times from one seed, and
// again from the same seed: the two draws must agree (a plan is repeated
// from its seed). It returns the first draw.
func randomParams(t *testing.T, name string, env *nemesis.Env, seed uint64, n int) []nemesis.Params {
	t.Helper()
	f := lookup(t, name)
	draw := func() []nemesis.Params {
		rng := rand.New(rand.NewPCG(seed, 1))
		out := make([]nemesis.Params, n)
		for i := range out {
			out[i] = f.RandomParams(rng, env)
		}
		return out
	}
	a, b := draw(), draw()
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: two draws from seed %d differ:\n%v\n%v", name, seed, a, b)
	}
	return a
}

// decode decodes a step's fault keys, written as YAML, into the fault's
// params.
func decode(t *testing.T, fault, keys string) (nemesis.Params, error) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(keys), &doc); err != nil {
		t.Fatal(err)
	}
	return nemesis.DecodeParams(fault, doc.Content[0])
}

// validateCase is one row of a params Validate table: params checked
// against a shape, accepted (want "") or refused naming key and saying
// want.
type validateCase struct {
	name   string
	shape  nemesis.Shape
	params nemesis.Params
	key    string
	want   string
}

// checkValidate runs a params Validate table: a refusal is ErrTarget,
// about the key named, saying what the row wants.
func checkValidate(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.params.Validate(tc.shape)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want refused (key %q): %q", tc.key, tc.want)
			}
			if !errors.Is(err, nemesis.ErrTarget) || nemesis.ErrorKey(err) != tc.key || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v (key %q), want ErrTarget with key %q saying %q", err, nemesis.ErrorKey(err), tc.key, tc.want)
			}
		})
	}
}

// appliesCase is one row of an Applies table: nil (want "") or a refusal
// saying want.
type appliesCase struct {
	name  string
	shape nemesis.Shape
	want  string
}

// checkApplies runs an Applies table for the named fault, both through
// Applies and through a scripted step's Check.
func checkApplies(t *testing.T, fault string, p nemesis.Params, cases []appliesCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := nemesis.Applies(fault, tc.shape)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Applies = %v, want a refusal saying %q", err, tc.want)
			}
			st := nemesis.Step{Fault: fault, Params: p, Duration: 1e9}
			if err := st.Check(tc.shape); (err == nil) != (tc.want == "") {
				t.Errorf("Step.Check = %v, Applies = %v: they disagree", err, nemesis.Applies(fault, tc.shape))
			}
		})
	}
}
