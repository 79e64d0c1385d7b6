package runner

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// TestPythonEtcd3MemberKilled: failover-leader's story with the member
// python-etcd3's clients dial first (A) killed, as on the seeds where A
// leads. The adapter gives the library every member (a gRPC target of
// several addresses), so the clients go on through another member; when
// it dialed A alone, nearly every op failed with ConnectionFailedError
// until the run ended, and the cell was unknown.
func TestPythonEtcd3MemberKilled(t *testing.T) {
	requireProgramRow(t, "python-etcd3")
	requireEtcd(t)
	const text = `name: python-etcd3-member-killed
backend: python-etcd3
etcd: {members: 3}
security: tls
clients: 2
keys: 1
ttl: 2s
hold: 500ms
duration: 6s
timeout: 500ms
think_min: 5ms
think_max: 25ms
seed: 1
nemesis:
  script:
    - fault: kill
      servers: [A]
      process: 0
      on: acquire
      for: 2500ms
`
	sc, err := scenarios.Parse([]byte(text), t.Name()+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := runIt(t, sc)
	if out.Results.Valid != checker.Valid {
		t.Fatalf("verdict %s, want valid:\n%s", out.Results.Valid, out.Summary)
	}
	acquires, unreachable := 0, 0
	for _, op := range readHistory(t, out) {
		if op.F != history.Acquire || op.Type == history.Invoke {
			continue
		}
		acquires++
		if strings.Contains(op.Error, "ConnectionFailed") {
			unreachable++
		}
	}
	if unreachable*2 >= acquires {
		t.Errorf("%d of %d acquires could not reach etcd: the clients did not go on through another member", unreachable, acquires)
	}
}
