package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/scenarios"
)

// refuseMode is a mode of this test alone, whose images have no Valkey.
const refuseMode = "runner-refuse-test"

func init() {
	cluster.RegisterImageProber(refuseMode, func(_ context.Context, _, program string) (bool, error) {
		return !strings.HasPrefix(program, "valkey"), nil
	})
}

// TestRefuseValkey: a run is refused before it starts when a kind it uses
// cannot serve it where its servers run — redis_program: valkey where the
// image has no valkey-server — whether its backend or exec.servers (or
// exec's default) runs the Redis; a run with no Redis, or with redis, is
// not.
func TestRefuseValkey(t *testing.T) {
	for _, tc := range []struct {
		name, text, program string
		refused             bool
	}{
		{"redis-token, valkey", "name: x\nbackend: redis-token\n", "valkey", true},
		{"redis-token over Sentinel, valkey", "name: x\nbackend: redis-token\nredis: sentinel\n", "valkey", true},
		{"redis-token, redis", "name: x\nbackend: redis-token\n", "redis", false},
		{"etcd, valkey", "name: x\nbackend: etcd\n", "valkey", false},
		{"exec's default server, valkey", "name: x\nbackend: exec\nexec: {command: [true]}\n", "valkey", true},
		{"exec.servers redis, valkey", "name: x\nbackend: exec\nexec: {command: [true], servers: [etcd, redis]}\n", "valkey", true},
		{"exec.servers etcd, valkey", "name: x\nbackend: exec\nexec: {command: [true], servers: [etcd]}\n", "valkey", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenarios.Parse([]byte(tc.text), "x.yaml")
			if err != nil {
				t.Fatal(err)
			}
			sc.Servers, sc.Images, sc.RedisProgram = refuseMode, map[string]string{"redis": "runner-refuse-test/no-valkey:1"}, tc.program
			why := refusal(context.Background(), sc)
			const want = "redis_program: valkey: the redis image runner-refuse-test/no-valkey:1 has no valkey-server (Debian package valkey-server); Debian has Valkey from 13 (trixie): --image redis=locktorture-servers:trixie (make images SUITES=trixie)"
			switch {
			case tc.refused && why != want:
				t.Errorf("refusal = %q, want %q", why, want)
			case !tc.refused && why != "":
				t.Errorf("refused: %q", why)
			}
		})
	}
}
