package shrink

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// hist builds a history from (time in ms, process, type, f, value) rows.
type row struct {
	ms    float64
	p     int
	typ   history.Type
	f     string
	value string
}

func hist(rows ...row) []history.Op {
	out := make([]history.Op, len(rows))
	for i, r := range rows {
		out[i] = history.Op{Index: int64(i), Time: int64(r.ms * float64(time.Millisecond)), Process: r.p, Type: r.typ, F: r.f}
		if r.p >= 0 {
			out[i].Key = "k0"
		}
		if r.value != "" {
			out[i].Value = json.RawMessage(r.value)
		}
	}
	return out
}

func scriptYAML(t *testing.T, recs []RecordedFault) string {
	t.Helper()
	var sc scenarios.Script
	for _, r := range recs {
		sc = append(sc, r.Step)
	}
	b, err := yaml.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFromHistory(t *testing.T) {
	pauseOnRead := faultEvents{"pause": {"read"}}
	tests := []struct {
		name   string
		ops    []history.Op
		events faultEvents
		want   string
	}{
		{"a pause a random mix fired on a read", hist(
			row{1000.4, 0, history.OK, "read", "3"},
			row{1000.9, -1, history.Info, "start-pause", `{"process":0,"ms":2500}`},
			row{3501, -1, history.Info, "stop-pause", `{"process":0}`},
		), pauseOnRead, `- fault: pause
  process: 0
  at: 1s
  on: read
  for: 2.5s
`},
		{"the same pause, timed", hist(
			row{1000.4, 0, history.OK, "read", "3"},
			row{1000.9, -1, history.Info, "start-pause", `{"process":0,"ms":2500}`},
		), nil, `- fault: pause
  process: 0
  at: 1s
  for: 2.5s
`},
		{"a pause after another process's read is timed", hist(
			row{999, 0, history.OK, "acquire", ""},
			row{1000.4, 1, history.OK, "read", "3"},
			row{1200, -1, history.Info, "start-pause", `{"process":0,"ms":700}`},
		), pauseOnRead, `- fault: pause
  process: 0
  at: 1.2s
  for: 700ms
`},
		{"partitions, latency, a server clock, a kill", hist(
			row{500, -1, history.Info, "start-partition", `{"topology":"isolate-client","cut":{"p1":["A"]},"direction":"both","ms":700}`},
			row{1200, -1, history.Info, "stop-partition", `{"cut":{"p1":["A"]}}`},
			row{1300, -1, history.Info, "start-partition", `{"topology":"cut","cut":{"p2":["B","C"]},"direction":"downstream","ms":900}`},
			row{1400, -1, history.Info, "start-latency", `{"clients":[2],"servers":["A"],"direction":"downstream","latency_ms":120,"jitter_ms":20,"ms":900}`},
			row{2000, -1, history.Info, "start-clock", `{"servers":["A"],"jump_ms":1500,"effect":"ttl-shortened","keys":1}`},
			row{2800.4, -1, history.Info, "stop-clock", `{"servers":["A"],"note":"a server clock jump cannot be undone"}`},
			row{3000, -1, history.Info, "kill", `{"servers":["A"],"restart_after_ms":0}`},
			row{3010, -1, history.Info, "restart", `{"servers":["A"]}`},
			row{3100, -1, history.Info, "start-clock", `{"clients":[1],"jump_ms":-300,"ms":400,"rate":1.25}`},
		), pauseOnRead, `- fault: partition
  process: 1
  topology: isolate-client
  at: 500ms
  for: 700ms
- fault: partition
  process: 2
  servers:
    - B
    - C
  topology: cut
  direction: downstream
  at: 1.3s
  for: 900ms
- fault: latency
  process: 2
  servers:
    - A
  direction: downstream
  latency: 120ms
  jitter: 20ms
  at: 1.4s
  for: 900ms
- fault: clock
  servers:
    - A
  jump: 1.5s
  at: 2s
  for: 800ms
- fault: kill
  servers:
    - A
  at: 3s
  for: 0s
- fault: clock
  process: 1
  jump: -300ms
  rate: 1.25
  at: 3.1s
  for: 400ms
`},
		{"a server pause never stopped keeps its planned length; terminate is instant", hist(
			row{100, -1, history.Info, "terminate", `{"sessions":[{"client":"p0","pid":1,"terminated":true}]}`},
			row{200, -1, history.Info, "start-server-pause", `{"servers":["A"],"ms":3000}`},
			row{900, 0, history.Invoke, "acquire", ""},
		), nil, `- fault: terminate
  at: 100ms
  for: 0s
- fault: server-pause
  servers:
    - A
  at: 200ms
  for: 3s
`},
		{"a failover's length is the time to its restart", hist(
			row{1000, -1, history.Info, "failover", `{"killed":"A","servers":["A"]}`},
			row{2600.2, -1, history.Info, "restart", `{"servers":["A"],"primary":"B"}`},
		), nil, `- fault: failover
  at: 1s
  for: 1.6s
`},
		{"a lost reply, once", hist(
			row{1000, -1, history.Info, "start-lost-reply", `{"clients":[1],"servers":["A","B"],"ms":300,"once":true}`},
			row{1300, -1, history.Info, "stop-lost-reply", `{"clients":[1]}`},
		), nil, `- fault: lost-reply
  process: 1
  once: true
  at: 1s
  for: 300ms
`},
		{"an ensemble's leader and a member cut off, a member slowed, the leader killed", hist(
			row{1000, -1, history.Info, "start-partition", `{"topology":"members","leader":"B","cut":{"B":["A","C"]},"direction":"both","ms":2000}`},
			row{3000, -1, history.Info, "stop-partition", `{"topology":"members","cut":{"B":["A","C"]}}`},
			row{3100, -1, history.Info, "start-partition", `{"topology":"members","cut":{"A":["B","C"]},"direction":"upstream","ms":500}`},
			row{3600, -1, history.Info, "stop-partition", `{"topology":"members","cut":{"A":["B","C"]}}`},
			row{3700, -1, history.Info, "start-latency", `{"topology":"members","between":{"C":["A","B"]},"direction":"downstream","latency_ms":300,"jitter_ms":0,"ms":1000}`},
			row{4700, -1, history.Info, "stop-latency", `{"topology":"members","between":{"C":["A","B"]}}`},
			row{4800, -1, history.Info, "kill", `{"servers":["C"],"leader":"C","restart_after_ms":500}`},
			row{5300, -1, history.Info, "restart", `{"servers":["C"]}`},
		), nil, `- fault: partition
  servers:
    - leader
  topology: members
  at: 1s
  for: 2s
- fault: partition
  servers:
    - A
  topology: members
  direction: upstream
  at: 3.1s
  for: 500ms
- fault: latency
  servers:
    - C
  topology: members
  direction: downstream
  latency: 300ms
  at: 3.7s
  for: 1s
- fault: kill
  servers:
    - leader
  at: 4.8s
  for: 500ms
`},
		{"a forced failover", hist(
			row{1000, -1, history.Info, "failover", `{"killed":"A","servers":["A"],"forced":true}`},
			row{2000, -1, history.Info, "restart", `{"servers":["A"],"primary":"B"}`},
		), nil, `- fault: failover
  force: true
  at: 1s
  for: 1s
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := fromHistory(tc.ops, tc.events)
			if err != nil {
				t.Fatal(err)
			}
			if got := scriptYAML(t, recs); got != tc.want {
				t.Fatalf("script:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestFromHistoryRefuses(t *testing.T) {
	tests := []struct {
		name string
		ops  []history.Op
		want string
	}{
		{"an unknown fault", hist(row{10, -1, history.Info, "start-meteor", `{}`}), `op 0: no fault records "start-meteor"`},
		{"a pause naming no process", hist(row{10, -1, history.Info, "start-pause", `{"ms":5}`}), "op 0 (start-pause): no process"},
		{"a value that is not JSON", hist(row{10, -1, history.Info, "start-pause", `{"process":`}), "op 0 (start-pause): value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fromHistory(tc.ops, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// The steps load again as a scenario's script: shrunk.yaml is a plain
// scenario file.
func TestFromHistoryLoads(t *testing.T) {
	recs, err := fromHistory(hist(
		row{1000.4, 0, history.OK, "read", "3"},
		row{1000.9, -1, history.Info, "start-pause", `{"process":0,"ms":2500}`},
		row{1200, -1, history.Info, "start-partition", `{"topology":"isolate-client","cut":{"p1":["A"]},"direction":"both","ms":700}`},
	), faultEvents{"pause": {"read"}})
	if err != nil {
		t.Fatal(err)
	}
	src := "name: x\nbackend: redis-token\nduration: 5s\nnemesis:\n  script:\n" + indent(scriptYAML(t, recs), "    ")
	sc, err := scenarios.Parse([]byte(src), "x.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	if len(sc.Nemesis.Script) != 2 || sc.Nemesis.Script[0].On != "read" {
		t.Fatalf("script = %+v", sc.Nemesis.Script)
	}
}

func indent(s, pre string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pre + l
		}
	}
	return strings.Join(lines, "")
}
