package clientprotocol

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/internal/duration"
)

// TestKindsReachTheChild: the run's kinds' settings cross to a client
// process (ChildConfig.Kinds) and come back as the same typed options.
func TestKindsReachTheChild(t *testing.T) {
	in := map[string]cluster.KindOptions{
		etcd.Kind:              &etcd.Options{Ensemble: cluster.Ensemble{Members: 3}},
		postgres.Kind:          &postgres.Options{Via: postgres.ViaPgBouncer, IdleSessionTimeout: duration.Duration(2 * time.Second), Settings: map[string]string{"lock_timeout": "2s"}},
		postgres.PgBouncerKind: &postgres.PgBouncerOptions{PoolMode: postgres.PoolTransaction, PoolSize: 2},
	}
	raw, err := EncodeKinds(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeKinds(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("decoded %#v, want %#v", out, in)
	}
	if _, err := decodeKinds(map[string]json.RawMessage{"mystery": json.RawMessage("{}")}); err == nil {
		t.Error("a kind that takes no settings was accepted")
	}
}
