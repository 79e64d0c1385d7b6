package clientprotocol

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/locktorture/locktorture/internal/owner"
	"github.com/locktorture/locktorture/internal/secret"
	"github.com/locktorture/locktorture/internal/testenv"
)

// TestClientCheckShowsNoSecret: an adapter that echoes the open request
// (whose auth holds the check's servers' password) to stdout — as a line
// that is not a message of the protocol, after prefixes of every length, so
// that the line is cut before, inside and after the password — and to
// stderr shows no part of the password in the report, its error, or any
// file the check writes (the logs in Dir).
func TestClientCheckShowsNoSecret(t *testing.T) {
	testenv.Require(t, "redis-server")
	for _, pad := range []string{"", "got: ", "the adapter got: ", strings.Repeat("x", 30), strings.Repeat("y", 47), strings.Repeat("z", 64)} {
		t.Run(strconv.Itoa(len(pad)), func(t *testing.T) {
			dir, got := t.TempDir(), filepath.Join(t.TempDir(), "open.json")
			rep, err := Check(context.Background(), CheckOptions{
				Command: []string{"/bin/sh", filepath.Join("testdata", "echo-open.sh")},
				Env:     map[string]string{"PAD": pad, "GOT": got},
				Dir:     dir,
			})
			if rep == nil {
				t.Fatalf("no report: %v", err)
			}
			open, rerr := os.ReadFile(got)
			m := regexp.MustCompile(`"password":"([^"]+)"`).FindSubmatch(open)
			if rerr != nil || m == nil {
				t.Fatalf("the adapter saw no password in its open request (%v): %s", rerr, open)
			}
			pw := string(m[1])
			shown := map[string]string{"the report": rep.Text()}
			if err != nil {
				shown["the error"] = err.Error()
			}
			_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(p)
					shown[p] = string(b)
				}
				return nil
			})
			if !strings.Contains(rep.Text(), "not a message of the protocol") && pad != "" {
				t.Errorf("the echoed line is not reported:\n%s", rep.Text())
			}
			for where, s := range shown {
				for i := 0; i+8 <= len(pw); i++ {
					if strings.Contains(s, pw[i:i+8]) {
						t.Errorf("%s shows part of the password (%q):\n%s", where, pw[i:i+8], s)
						break
					}
				}
			}
		})
	}
}

// TestClientCheckBinaryAdapter: an adapter that answers open with random
// binary is told so in one line for the rule, with how many lines broke
// it, and nothing it wrote reaches the report raw: no terminal escape, no
// carriage return, no byte that is not UTF-8, no bidi override.
func TestClientCheckBinaryAdapter(t *testing.T) {
	testenv.Require(t, "redis-server")
	data := []byte("one \x1b[2J\x1b[31mred\r\ntwo \xff\xfe not utf-8 \u202e bidi\n")
	r := rand.New(rand.NewPCG(43, 11))
	for range 6000 {
		data = append(data, byte(r.IntN(256)))
	}
	data = append(data, "\nlast line\n"...)
	bin := filepath.Join(t.TempDir(), "binary")
	if err := os.WriteFile(bin, data, 0o644); err != nil {
		t.Fatal(err)
	}
	lines := 0
	for l := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines++
		}
	}
	rep, err := Check(context.Background(), CheckOptions{
		Command: []string{"/bin/sh", filepath.Join("testdata", "binary.sh")},
		Env:     map[string]string{"BINARY": bin},
		Dir:     t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	text := rep.Text()
	rules := map[string]int{}
	for _, f := range rep.Broken() {
		rules[f.Rule]++
	}
	for rule, n := range rules {
		if n > 1 {
			t.Errorf("rule %q said %d times:\n%s", rule, n, text)
		}
	}
	if rules["lines"] != 1 {
		t.Fatalf("no broken lines rule:\n%s", text)
	}
	for _, f := range rep.Broken() {
		if f.Rule == "lines" && !strings.Contains(f.Says, strconv.Itoa(lines)+" lines") {
			t.Errorf("lines: %q does not count the %d lines", f.Says, lines)
		}
	}
	if !utf8.ValidString(text) {
		t.Errorf("the report is not UTF-8:\n%q", text)
	}
	for _, c := range text {
		if (c < 0x20 && c != '\n') || c == 0x7f || c == '\u202e' || (c >= 0x80 && c < 0xa0) {
			t.Errorf("the report holds %U raw:\n%q", c, text)
			break
		}
	}
}

// TestClientCheckInterrupted: a check whose context ends (Ctrl-C) before
// it finished gives no report — no verdict on a rule it never finished
// checking ("no reply to open within 10s" after 1.5 s) — and an error
// saying it was interrupted: while open is unanswered, and while client 0's
// link is cut.
func TestClientCheckInterrupted(t *testing.T) {
	testenv.Require(t, "redis-server")
	t.Run("open unanswered", func(t *testing.T) {
		ready := filepath.Join(t.TempDir(), "ready")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				if _, err := os.Stat(ready); err == nil {
					cancel()
					return
				}
				select {
				case <-done:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		rep, err := Check(ctx, CheckOptions{
			Command: []string{"/bin/sh", filepath.Join("testdata", "ready-hang.sh")},
			Env:     map[string]string{"READY": ready},
			Dir:     t.TempDir(),
		})
		checkInterrupted(t, rep, err)
	})
	t.Run("link cut", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rep, err := Check(ctx, CheckOptions{
			Command: []string{"/bin/sh", filepath.Join("testdata", "good.sh")},
			Dir:     t.TempDir(),
			Progress: func(step string) {
				if strings.HasPrefix(step, "a cut link") {
					cancel()
				}
			},
		})
		checkInterrupted(t, rep, err)
	})
}

func checkInterrupted(t *testing.T, rep *CheckReport, err error) {
	t.Helper()
	if rep != nil {
		t.Errorf("an interrupted check reported:\n%s", rep.Text())
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(fmtErr(err), "interrupted") {
		t.Errorf("error %v: want one saying interrupted", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestClientCheckOwnsItsTempDir: the temporary directory a check makes
// (no Dir given) names its owner, so that the next run removes it should
// the check be killed with SIGKILL (owner.Reap), and is gone after.
func TestClientCheckOwnsItsTempDir(t *testing.T) {
	testenv.Require(t, "redis-server")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	me, err := owner.ID()
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	_, err = Check(context.Background(), CheckOptions{
		Command: []string{"/bin/sh", filepath.Join("testdata", "crash.sh")},
		Progress: func(step string) {
			if !strings.HasPrefix(step, "starting two copies") {
				return
			}
			dirs, _ := filepath.Glob(filepath.Join(tmp, "locktorture-client-check-*"))
			for _, d := range dirs {
				b, err := os.ReadFile(filepath.Join(d, owner.File))
				if err != nil || strings.TrimSpace(string(b)) != me {
					t.Errorf("%s names no owner, or not this process (%q, %v)", d, b, err)
				}
				seen = append(seen, d)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 {
		t.Fatalf("want the check's one temporary directory, found %v", seen)
	}
	if _, err := os.Stat(seen[0]); err == nil {
		t.Errorf("%s outlived the check", seen[0])
	}
}

// TestShowLine: a client's line is shown with its secrets masked before it
// is cut (no part of one survives the cut), quoted printably, and cut
// neither inside an escape nor inside a mask.
func TestShowLine(t *testing.T) {
	const pw = "0123456789abcdef-showline-secret"
	secret.Register(pw)
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain", `{"id":1,"type":"ok"}`, 200, `{"id":1,"type":"ok"}`},
		{"escapes", "a\x1b[31mb\r\tc\x7f", 200, `a\x1b[31mb\r\tc\x7f`},
		{"not UTF-8", "a\xff\xfeb", 200, `a\xff\xfeb`},
		{"bidi override", "a\u202eb é", 200, `a\u202eb é`},
		{"backslash", `a\x1b`, 200, `a\\x1b`},
		{"cut", "abcdefghij", 5, "abcde..."},
		{"cut before an escape", "abcd\x1bef", 6, "abcd..."},
		{"cut before a multibyte character", "abcdé", 5, "abcd..."},
		{"secret whole", "pw " + pw + " end", 200, "pw [redacted] end"},
		{"secret where the line is cut", "pw " + pw + " end", 12, "pw ..."},
		{"cut inside the mask", "pw " + pw, 8, "pw ..."},
		{"JSON password, escaped", `{"username":"u","password":"p\u003cs\"s\\w"}`, 200, `{"username":"u","password":"[redacted]"}`},
		{"ZooKeeper digest", `{"auth":"u:secret-digest","scheme":"digest"}`, 200, `{"auth":"[redacted]","scheme":"digest"}`},
		{"an auth object is no string", `{"auth":{"redis":{"password":"x"}}}`, 200, `{"auth":{"redis":{"password":"[redacted]"}}}`},
		{"an error naming auth is kept", `{"id":1,"type":"fail","error":"NOAUTH auth required"}`, 200, `{"id":1,"type":"fail","error":"NOAUTH auth required"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := showLine([]byte(tc.in), tc.max); got != tc.want {
				t.Errorf("showLine(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}

// TestTallySays: a rule broken by many lines is one finding saying the
// first and how many, by copy.
func TestTallySays(t *testing.T) {
	for _, tc := range []struct {
		rule string
		n    map[string]int
		who  []string
		want string
	}{
		{"lines", map[string]int{"client 0": 1}, []string{"client 0"}, "client 0 wrote a line that is not a message of the protocol: FIRST"},
		{"lines", map[string]int{"client 0": 17}, []string{"client 0"}, "client 0 wrote 17 lines that are not messages of the protocol; the first: FIRST"},
		{"lines", map[string]int{"client 0": 17, "client 1": 2}, []string{"client 1", "client 0"}, "client 1 and client 0 wrote 19 lines that are not messages of the protocol (2 and 17); the first, client 1's: FIRST"},
		{"ids", map[string]int{"client 0": 1}, []string{"client 0"}, "client 0 FIRST"},
		{"ids", map[string]int{"client 0": 3}, []string{"client 0"}, "client 0 broke it 3 times; the first time, it FIRST"},
	} {
		got := (&tally{who: tc.who, n: tc.n, first: "FIRST"}).says(tc.rule)
		if got != tc.want {
			t.Errorf("%s %v:\n got %q\nwant %q", tc.rule, tc.n, got, tc.want)
		}
	}
}
