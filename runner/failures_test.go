package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// adapterEnv names the test child the test binary runs as (see TestMain).
const adapterEnv = "LT_TEST_ADAPTER"

// ignoreAuthAdapter is a test child (LT_TEST_ADAPTER=ignore-auth): a
// client-protocol adapter that dials the first Redis it is given and
// ignores the open request's auth, as an adapter written before the
// servers asked for credentials does. Each acquire is a SET NX PX; the
// server's refusal is its fail.
func ignoreAuthAdapter() {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	var conn net.Conn
	var rd *bufio.Reader
	ttl := int64(1000)
	for in.Scan() {
		var req struct {
			ID      int64  `json:"id"`
			Op      string `json:"op"`
			Key     string `json:"key"`
			TTLMS   int64  `json:"ttl_ms"`
			Servers struct {
				Redis []string `json:"redis"`
			} `json:"servers"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			os.Exit(3)
		}
		reply := map[string]any{"id": req.ID, "type": "ok"}
		switch req.Op {
		case "open":
			c, err := net.DialTimeout("tcp", req.Servers.Redis[0], 5*time.Second)
			if err != nil {
				reply["type"], reply["error"] = "fail", err.Error()
			} else {
				conn, rd, ttl = c, bufio.NewReader(c), req.TTLMS
			}
		case "acquire":
			_ = conn.SetDeadline(time.Now().Add(time.Second))
			fmt.Fprintf(conn, "SET lock:%s x NX PX %d\r\n", req.Key, ttl)
			l, err := rd.ReadString('\n')
			l = strings.TrimSpace(l)
			switch {
			case err != nil:
				reply["type"], reply["error"] = "info", err.Error()
			case strings.HasPrefix(l, "-"):
				reply["type"], reply["error"] = "fail", strings.TrimPrefix(l, "-")
			case l == "$-1":
				reply["type"], reply["error"] = "fail", "busy"
			}
		case "release":
			reply["type"], reply["error"] = "fail", "not held"
		}
		_ = out.Encode(reply)
		if req.Op == "close" {
			os.Exit(0)
		}
	}
}

// TestFailuresNamed: an adapter that ignores auth gets every acquire
// refused NOAUTH by the run's own Redis. The verdict stays unknown
// (nothing was checked), and the summary, run.log and the report name
// the most common error, how often it came, and where to look.
func TestFailuresNamed(t *testing.T) {
	requireRedis(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(adapterEnv, "ignore-auth")
	sc := builtin(t, "baseline", scenarios.Overrides{Duration: ptr(time.Second), Clients: ptr(2), Exec: ptr(self)})
	out, _ := runIt(t, sc)
	if out.Results.Valid != checker.Unknown {
		t.Fatalf("verdict %s, want unknown:\n%s", out.Results.Valid, out.Summary)
	}
	acquires := 0
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.F == history.Acquire && op.Type == history.Fail && strings.HasPrefix(op.Error, "NOAUTH") {
			acquires++
		}
	}
	if acquires == 0 {
		t.Fatalf("no acquire failed NOAUTH: the run's Redis asks for no password?\n%s", out.Summary)
	}
	want := []string{fmt.Sprintf("%d×", acquires), "NOAUTH Authentication required", "client-protocol.md#credentials"}
	runLog, err := os.ReadFile(filepath.Join(out.Dir, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(out.Dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"summary": out.Summary, "run.log": string(runLog), "report": string(html)} {
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("the %s does not say %q:\n%s", where, w, text)
			}
		}
	}
}

// TestNoteFailures: a note only when most client ops failed, naming the
// most common error and its count; busy and not held are the lock's own
// answers, not failures.
func TestNoteFailures(t *testing.T) {
	op := func(f string, typ history.Type, e string) history.Op {
		return history.Op{Process: 0, F: f, Type: typ, Error: e}
	}
	var healthy, refused failureTally
	for range 10 {
		healthy.add(&history.Op{Process: 0, Type: history.Invoke, F: history.Acquire})
		// As a history records a busy lock (workload's errString; the
		// protocol's word too): "busy", not ErrBusy's own text.
		o := op(history.Acquire, history.Fail, "busy")
		healthy.add(&o)
		o = op(history.Acquire, history.Fail, "NOAUTH Authentication required.")
		refused.add(&o)
	}
	// A contended lock: mostly busy, one grant, one release that came too
	// late (not held).
	for _, o := range []history.Op{op(history.Acquire, history.OK, ""), op(history.Release, history.Fail, "lock is not held by this client")} {
		healthy.add(&o)
	}
	o := op(history.Acquire, history.Info, "i/o timeout")
	refused.add(&o)
	o = op(history.Acquire, history.OK, "")
	refused.add(&o)
	if s := healthy.note(); s != "" {
		t.Errorf("a run of busy locks got a note: %q", s)
	}
	s := refused.note()
	for _, w := range []string{"11 of 12", `10×: "NOAUTH Authentication required."`, "#credentials"} {
		if !strings.Contains(s, w) {
			t.Errorf("note %q does not say %q", s, w)
		}
	}
}
