package clientprotocol

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/cluster"
)

// TestOpenRequestAsDocumented pins the open request to
// docs/client-protocol.md, which the adapters in clients/ (Python, the Go
// example) and the users' own are written against: the doc's example open
// line is what OpenRequest writes, byte for byte (names and order), and
// each field is named in the doc's open bullets or its example.
func TestOpenRequestAsDocumented(t *testing.T) {
	req := OpenRequest{ID: 0, Op: OpOpen, Process: 0, TTLMS: 1000, TimeoutMS: 500,
		Servers: cluster.ServerSet{Servers: map[string][]string{"redis": {"127.0.0.1:41001"}}}, Options: map[string]any{}}
	got, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../docs/client-protocol.md")
	doc := string(b)
	if err != nil {
		t.Fatal(err)
	}
	// The example's open request: from `-> {"id":0,"op":"open"` to the
	// reply, its second line indented.
	m := regexp.MustCompile(`(?s)-> (\{"id":0,"op":"open".*?)\n<- `).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal(`the doc's example has no open request (-> {"id":0,"op":"open",...)`)
	}
	example := regexp.MustCompile(`\n\s+`).ReplaceAllString(m[1], "")
	if string(got) != example {
		t.Errorf("OpenRequest writes\n%s\nthe doc's example is\n%s", got, example)
	}
	// Every field is in the doc: in the example, or as `name` in a bullet
	// about open (auth, present only when the servers ask).
	bullets := strings.Join(regexp.MustCompile(`(?m)^- \*\*open\*\*.*(?:\n  .*)*`).FindAllString(doc, -1), "\n")
	typ := reflect.TypeFor[OpenRequest]()
	var names []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
		if !strings.Contains(example, `"`+name+`":`) && !strings.Contains(bullets, "`"+name+"`") {
			t.Errorf("field %q of the open request is not in docs/client-protocol.md", name)
		}
	}
	want := []string{"id", "op", "process", "ttl_ms", "timeout_ms", "servers", "auth", "options"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("the open request's fields are %v, want %v (the protocol's)", names, want)
	}
}

// TestInboundReadsOpen: a child reads the open request the harness writes
// as Inbound, every field, its id included; a clock message has no id.
func TestInboundReadsOpen(t *testing.T) {
	sent := OpenRequest{ID: 7, Op: OpOpen, Process: 2, TTLMS: 1000, TimeoutMS: 500,
		Servers: cluster.ServerSet{Servers: map[string][]string{"etcd": {"127.0.0.1:1", "127.0.0.1:2"}}},
		Auth:    cluster.AuthSet{"etcd": {{Username: "lt", Password: "pw"}}}, Options: map[string]any{"renew": true}}
	for _, c := range []struct {
		name, line string
		id         *int64
		want       OpenRequest
	}{
		{"open", "", &sent.ID, sent},
		{"clock", `{"op":"clock","offset_ns":5}`, nil, OpenRequest{Op: opClock}},
	} {
		line := []byte(c.line)
		if c.line == "" {
			var err error
			if line, err = json.Marshal(c.want); err != nil {
				t.Fatal(err)
			}
		}
		var r Inbound
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (r.ID == nil) != (c.id == nil) || (r.ID != nil && *r.ID != *c.id) {
			t.Errorf("%s: id %v, want %v", c.name, r.ID, c.id)
		}
		got := r.OpenRequest
		got.ID = c.want.ID
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: read %+v, want %+v", c.name, got, c.want)
		}
	}
}
