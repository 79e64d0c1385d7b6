package redis

import (
	"context"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/testenv"
)

// TestCutReplication: with replication cut by the servers themselves, a
// write to the primary never reaches the replica; after the heal it does.
func TestCutReplication(t *testing.T) {
	testenv.Require(t, "redis-server", "redis-sentinel")
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{Locked: true}) // the cut and its heal speak to servers that ask for a password
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g, err := StartSentinelGroup(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := g.replicasOf(ctx)
	if err != nil || len(reps) != 1 || reps[0] != g.Replica.Addr() {
		t.Fatalf("replicasOf = %v, %v; want [%s]", reps, err, g.Replica.Addr())
	}
	heal, err := g.CutReplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := redisCall(ctx, endpoint(g.Primary), "SET", "during-the-cut", "1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if v, _ := redisCall(ctx, endpoint(g.Replica), "EXISTS", "during-the-cut"); v != int64(0) {
		t.Fatal("the write reached the replica through the cut")
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitFor(ctx, 15*time.Second, func() error {
		if v, _ := redisCall(ctx, endpoint(g.Replica), "EXISTS", "during-the-cut"); v != int64(1) {
			return errString("not yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("the replica did not catch up after the heal: %v", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
