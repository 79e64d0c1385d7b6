package redis

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/cluster"
)

// refuseMode is a mode of this test alone, whose images have
// valkey-server and no valkey-sentinel.
const refuseMode = "redis-refuse-test"

func init() {
	cluster.RegisterImageProber(refuseMode, func(_ context.Context, _, program string) (bool, error) {
		return program == "valkey-server", nil
	})
}

// TestRefusal: the redis kind refuses redis_program: valkey where the
// servers' image has no Valkey program the run needs (valkey-sentinel
// only over Sentinel), with the reason and how to get one; redis, or
// Valkey where the image has it, is not refused. It is the runner's
// refusal (cluster.Refuser).
func TestRefusal(t *testing.T) {
	images := map[string]string{Kind: "refuse-test/valkey-no-sentinel:1"}
	for _, tc := range []struct {
		name     string
		program  string
		sentinel bool
		want     string
	}{
		{"redis", cluster.RedisProgramRedis, true, ""},
		{"the default", "", true, ""},
		{"valkey, one server", cluster.RedisProgramValkey, false, ""},
		{"valkey over Sentinel", cluster.RedisProgramValkey, true,
			"redis_program: valkey: the redis image refuse-test/valkey-no-sentinel:1 has no valkey-sentinel (Debian package valkey-sentinel); Debian has Valkey from 13 (trixie): --image redis=locktorture-servers:trixie (make images SUITES=trixie)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cluster.RunView{Kinds: []string{Kind}, Servers: refuseMode, Images: images, RedisProgram: tc.program, Start: cluster.StartOptions{Sentinel: tc.sentinel}}
			k, _ := cluster.LookupKind(Kind)
			rf, ok := k.Abilities.(cluster.Refuser)
			if !ok {
				t.Fatal("the redis kind is no cluster.Refuser")
			}
			if got := rf.Refusal(context.Background(), r); got != tc.want {
				t.Errorf("Refusal = %q, want %q", got, tc.want)
			}
		})
	}
}
