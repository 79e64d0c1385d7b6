package nemesis_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
)

// TestFaultsOwnTheirParams: every fault has its own params, which a
// random plan produces too, names the keys it takes, and refuses others.
func TestFaultsOwnTheirParams(t *testing.T) {
	cl, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	env := &nemesis.Env{Gates: gates(3), Cluster: cl}
	for _, in := range nemesis.List() {
		t.Run(in.Name, func(t *testing.T) {
			f, err := nemesis.Lookup(in.Name)
			if err != nil {
				t.Fatal(err)
			}
			fresh := f.Params()
			if fresh == nil || len(nemesis.Keys(fresh)) == 0 {
				t.Fatalf("params %#v take no key", fresh)
			}
			if s := (nemesis.Step{Fault: in.Name, Params: fresh}).String(); !strings.Contains(s, "(no target)") {
				t.Errorf("fresh params describe themselves: %q", s)
			}
			plan, err := nemesis.Plan(nemesis.Random{Faults: []string{in.Name}, Interval: time.Second, Min: time.Second, Max: time.Second}, 3, time.Minute, env)
			if err != nil || len(plan) == 0 {
				t.Fatalf("Plan: %v, %v", plan, err)
			}
			for _, st := range plan {
				if reflect.TypeOf(st.Params) != reflect.TypeOf(fresh) {
					t.Fatalf("a random %s has params %T, a scripted one %T", in.Name, st.Params, fresh)
				}
			}
			var keys yaml.Node
			if err := yaml.Unmarshal([]byte("bogus: 1\n"), &keys); err != nil {
				t.Fatal(err)
			}
			_, err = nemesis.DecodeParams(in.Name, keys.Content[0])
			if err == nil || !strings.Contains(err.Error(), in.Name+` takes no "bogus" (it takes: `+strings.Join(nemesis.Keys(fresh), ", ")+")") {
				t.Errorf("DecodeParams(bogus) = %v", err)
			}
		})
	}
	// A step whose params belong to another fault is refused, not run.
	st := nemesis.Step{Fault: "kill", Params: pp(0), Duration: time.Second}
	if err := st.Check(nemesis.Shape{Clients: 1, Kinds: []string{"redis"}}); !errors.Is(err, nemesis.ErrTarget) {
		t.Errorf("kill with pause's params: %v", err)
	}
}
