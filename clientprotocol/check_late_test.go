package clientprotocol

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/testenv"
)

// adapterEnv names the test child the test binary runs as (see TestMain).
const adapterEnv = "LT_TEST_ADAPTER"

// lateAnswer is how long after it arrived lateAdapter answers its first
// late grant.
const lateAnswer = 5 * time.Second

// lateAdapter is a test child (LT_TEST_ADAPTER=late): a Redis try-lock
// adapter (SET NX PX, released by a compare-and-delete script) that keeps
// the protocol but for one thing: the first grant whose SET took over
// twice timeout_ms (the check's slowed link holds each reply 3 times
// timeout_ms; a busy machine is slower than usual, not that slow) is
// answered ok lateAnswer after its request arrived, and kept — a client
// whose library waits as long as it takes. Every later slow grant is
// given back and answered info at once; a Redis error (the link cut) is
// info; a Redis error is fail. With ignoreAuth it ignores the open
// request's auth, as an adapter written before the servers asked for
// credentials does.
func lateAdapter(ignoreAuth bool) {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	var (
		conn          net.Conn
		rd            *bufio.Reader
		addr          string
		auth          *cluster.Auth
		ttl, timeout  time.Duration
		process, made int
		lateDone      bool
	)
	tokens := map[string]string{}
	redis := func(args ...string) (string, error) {
		if conn == nil {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return "", err
			}
			conn, rd = c, bufio.NewReader(c)
			if auth != nil && auth.Password != "" {
				if l, err := resp(conn, rd, "AUTH", auth.Username, auth.Password); err != nil || !strings.HasPrefix(l, "+") {
					conn.Close()
					conn = nil
					return "", fmt.Errorf("AUTH: %s %w", l, err)
				}
			}
		}
		l, err := resp(conn, rd, args...)
		if err != nil {
			conn.Close()
			conn = nil
		}
		return l, err
	}
	for in.Scan() {
		arrived := time.Now()
		var req struct {
			ID        int64  `json:"id"`
			Op        string `json:"op"`
			Key       string `json:"key"`
			Process   int    `json:"process"`
			TTLMS     int64  `json:"ttl_ms"`
			TimeoutMS int64  `json:"timeout_ms"`
			Servers   struct {
				Redis []string `json:"redis"`
			} `json:"servers"`
			Auth cluster.AuthSet `json:"auth"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			os.Exit(3)
		}
		reply := map[string]any{"id": req.ID, "type": "ok"}
		switch req.Op {
		case OpOpen:
			addr, auth, process = req.Servers.Redis[0], req.Auth.For("redis", 0), req.Process
			if ignoreAuth {
				auth = nil
			}
			ttl, timeout = time.Duration(req.TTLMS)*time.Millisecond, time.Duration(req.TimeoutMS)*time.Millisecond
			if _, err := redis("PING"); err != nil {
				reply["type"], reply["error"] = "fail", err.Error()
			}
		case OpAcquire:
			made++
			tok := fmt.Sprintf("%d-%d", process, made)
			began := time.Now()
			l, err := redis("SET", "lock:"+req.Key, tok, "NX", "PX", fmt.Sprint(ttl.Milliseconds()))
			switch {
			case err != nil:
				reply["type"], reply["error"] = "info", err.Error()
			case l == "$-1":
				reply["type"], reply["error"] = "fail", "busy"
			case strings.HasPrefix(l, "-"):
				reply["type"], reply["error"] = "fail", strings.TrimPrefix(l, "-")
			case l != "+OK":
				reply["type"], reply["error"] = "info", l
			case time.Since(began) <= 2*timeout:
				tokens[req.Key] = tok
			case !lateDone:
				lateDone = true
				tokens[req.Key] = tok
				time.Sleep(time.Until(arrived.Add(lateAnswer)))
			default:
				_, _ = redis("EVAL", releaseScript, "1", "lock:"+req.Key, tok)
				reply["type"], reply["error"] = "info", "granted too late; given back"
			}
		case OpRelease:
			tok, ok := tokens[req.Key]
			delete(tokens, req.Key)
			l, err := "", error(nil)
			if ok {
				l, err = redis("EVAL", releaseScript, "1", "lock:"+req.Key, tok)
			}
			switch {
			case err != nil:
				reply["type"], reply["error"] = "info", err.Error()
			case l != ":1":
				reply["type"], reply["error"] = "fail", "not held"
			}
		}
		_ = out.Encode(reply)
		if req.Op == OpClose {
			os.Exit(0)
		}
	}
}

// releaseScript deletes a lock that still carries the token given.
const releaseScript = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// resp sends one Redis command and reads the first line of its reply.
func resp(c net.Conn, rd *bufio.Reader, args ...string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(1500 * time.Millisecond))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	l, err := rd.ReadString('\n')
	return strings.TrimSpace(l), err
}

// selfAdapter is the command that runs this test binary as the test
// child named mode.
func selfAdapter(t *testing.T, mode string) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(adapterEnv, mode)
	return []string{self}
}

// TestClientCheckLate: an adapter that answers an acquire made on a
// delayed link 5s after it was sent, and keeps that grant, is told so:
// late, by how much (not "never answered"), the late grant judged on a
// line of its own, and no line said twice.
func TestClientCheckLate(t *testing.T) {
	testenv.Require(t, "redis-server")
	rep, err := Check(context.Background(), CheckOptions{Command: selfAdapter(t, "late"), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	text := rep.Text()
	if strings.Contains(text, "never answered") {
		t.Errorf("a reply that came late is said never to have come:\n%s", text)
	}
	var every, grant []Finding
	for _, f := range rep.Findings {
		switch f.Rule {
		case "answer every request":
			if f.Broken {
				every = append(every, f)
			}
		case "late grant":
			grant = append(grant, f)
		}
	}
	if len(every) != 1 || !every[0].Broken || !strings.Contains(every[0].Says, "late") {
		t.Errorf("want one broken %q finding saying late, got %+v:\n%s", "answer every request", every, text)
	} else if d := longest(every[0].Says); d < lateAnswer-time.Second {
		t.Errorf("%q: the longest duration it names is %s, want how late it was (about %s)", every[0].Says, d, lateAnswer)
	}
	if len(grant) == 0 || !grant[0].Broken || !strings.Contains(grant[0].Says, "kept the lock") {
		t.Errorf("want a broken %q finding of its own saying the lock was kept, got %+v:\n%s", "late grant", grant, text)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if seen[l] {
			t.Errorf("line said twice: %s", l)
		}
		seen[l] = true
	}
}

// longest is the longest Go duration written in s.
func longest(s string) time.Duration {
	var out time.Duration
	for _, m := range regexp.MustCompile(`\d+(\.\d+)?(ms|s)`).FindAllString(s, -1) {
		if d, err := time.ParseDuration(m); err == nil && d > out {
			out = d
		}
	}
	return out
}

// TestClientCheckLongLine: an adapter that answers open with 50 MB and no
// newline is told it wrote a line over the protocol's 1 MiB, not that it
// did not reply.
func TestClientCheckLongLine(t *testing.T) {
	testenv.Require(t, "redis-server")
	rep, err := Check(context.Background(), CheckOptions{Command: []string{"/bin/sh", filepath.Join("testdata", "huge-line.sh")}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var open []Finding
	for _, f := range rep.Findings {
		if f.Rule == "open" {
			open = append(open, f)
		}
	}
	if len(open) == 0 {
		t.Fatalf("no finding about open:\n%s", rep.Text())
	}
	for _, f := range open {
		if !f.Broken || !strings.Contains(f.Says, "a line over 1 MiB") || strings.Contains(f.Says, "no reply") {
			t.Errorf("open: %q, want it to say a line over 1 MiB, not no reply", f.Says)
		}
	}
}

// TestClientCheckIgnoresAuth: an adapter that ignores the open request's
// auth is refused NOAUTH by the check's Redis, and the finding says where
// to look.
func TestClientCheckIgnoresAuth(t *testing.T) {
	testenv.Require(t, "redis-server")
	rep, err := Check(context.Background(), CheckOptions{Command: selfAdapter(t, "ignore-auth"), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b := rep.Broken()
	if len(b) == 0 || !strings.Contains(b[0].Says, "NOAUTH") || !strings.Contains(b[0].Says, CredentialsDoc) {
		t.Errorf("want a broken finding naming NOAUTH and %s, got:\n%s", CredentialsDoc, rep.Text())
	}
}
