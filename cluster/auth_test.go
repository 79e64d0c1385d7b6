package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/runca"
	"github.com/locktorture/locktorture/internal/secret"
)

// TestServersFileAuth: credentials by reference resolve from the
// environment; an inline secret, a missing variable or a missing TLS file
// is one line naming the variable or file (never the secret).
func TestServersFileAuth(t *testing.T) {
	t.Setenv("LT_TEST_PW", "s3cret-from-env")
	t.Setenv("LT_TEST_SENTINEL_PW", "sentinel-pw-xyz")
	dir := t.TempDir()
	ca := testCA(t, dir)
	file := filepath.Join(dir, "s.yaml")
	tests := []struct {
		name, in string
		line     int    // 0: accepted
		has      string // what the problem names
	}{
		{"password_env", "redis:\n  - {addr: 127.0.0.1:6379, username: lt, password_env: LT_TEST_PW}\n", 0, ""},
		{"${NAME}", "redis:\n  - addr: 127.0.0.1:6379\n    password: ${LT_TEST_PW}\n    tls: {ca: ca/ca.pem}\n", 0, ""},
		{"sentinel and master", "sentinel:\n  master: m\n  addrs: [127.0.0.1:26379]\n  password_env: LT_TEST_SENTINEL_PW\n  master_auth: {username: lt, password_env: LT_TEST_PW}\n", 0, ""},
		{"inline secret", "redis:\n  - {addr: 127.0.0.1:6379, password: hunter2hunter2}\n", 2, "password must be a reference"},
		{"missing variable", "redis:\n  - {addr: 127.0.0.1:6379, password_env: LT_TEST_NOT_SET}\n", 2, "environment variable LT_TEST_NOT_SET is not set"},
		{"missing master variable", "sentinel:\n  master: m\n  addrs: [127.0.0.1:26379]\n  master_auth: {password: \"${LT_TEST_NOPE}\"}\n", 2, "LT_TEST_NOPE"},
		{"two variables", "redis:\n  - {addr: 127.0.0.1:6379, password: \"${LT_TEST_PW}\", password_env: OTHER}\n", 2, "two variables"},
		{"missing CA", "redis:\n  - {addr: 127.0.0.1:6379, tls: {ca: /nonexistent/ca.pem}}\n", 2, "/nonexistent/ca.pem"},
		{"missing key", "redis:\n  - {addr: 127.0.0.1:6379, tls: {cert: ca/ca.pem, key: /nonexistent/client.key}}\n", 2, "tls key /nonexistent/client.key"},
		{"missing cert", "redis:\n  - {addr: 127.0.0.1:6379, tls: {cert: /nonexistent/client.pem, key: ca/ca.pem}}\n", 2, "tls cert /nonexistent/client.pem"},
		{"unknown tls field", "redis:\n  - {addr: 127.0.0.1:6379, tls: {colour: red}}\n", 2, "colour"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseServersFile([]byte(tc.in), file)
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want a problem naming %q", tc.has)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.has) || strings.Contains(msg, "\n") || !strings.Contains(msg, "s.yaml:"+itoa(tc.line)+":") {
				t.Errorf("%v: want one line at line %d naming %q", err, tc.line, tc.has)
			}
			if strings.Contains(msg, "hunter2hunter2") || strings.Contains(msg, "s3cret-from-env") {
				t.Errorf("%v: the error holds a secret", err)
			}
			_ = f
		})
	}
	f, err := parseServersFile([]byte(tests[1].in+"sentinel:\n  master: m\n  addrs: [127.0.0.1:26379]\n  password_env: LT_TEST_SENTINEL_PW\n  master_auth: {username: lt, password_env: LT_TEST_PW}\n"), file)
	if err != nil {
		t.Fatal(err)
	}
	g := f.ServerSet()
	a := g.Auth.For("redis", 0)
	if a == nil || a.Password != "s3cret-from-env" || a.TLS == nil || a.TLS.CA != ca {
		t.Fatalf("redis auth = %+v, want the variable's password and the CA beside the file", a)
	}
	if s := g.Auth.For("sentinel", 0); s == nil || s.Password != "sentinel-pw-xyz" {
		t.Errorf("sentinel auth = %+v", s)
	}
	if m := g.Sentinel.MasterAuth; m == nil || m.Username != "lt" || m.Password != "s3cret-from-env" {
		t.Errorf("master auth = %+v", m)
	}
	if got := secret.Redact("AUTH lt s3cret-from-env"); got != "AUTH lt "+secret.Mask {
		t.Errorf("the password is not registered as a secret: %q", got)
	}
}

// TestAuthSetJSON: the protocol's auth object — one object when every
// server of a kind asks the same, a list in address order otherwise — and
// TLS files copied 0600.
func TestAuthSetJSON(t *testing.T) {
	dir := t.TempDir()
	ca := testCA(t, dir)
	same := &Auth{Username: "lt", Password: "pw-one-1"}
	tests := []struct {
		name string
		set  AuthSet
		want string
	}{
		{"nothing", AuthSet{"redis": {nil, nil}}, `{}`},
		{"one for all", AuthSet{"redis": {same, same}}, `{"redis":{"username":"lt","password":"pw-one-1"}}`},
		{"one each", AuthSet{"redis": {same, nil}}, `{"redis":[{"username":"lt","password":"pw-one-1"},null]}`},
		{"zookeeper", AuthSet{"zookeeper": {{Scheme: "digest", Digest: "u:p"}}}, `{"zookeeper":{"scheme":"digest","auth":"u:p"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.set)
			if err != nil || string(b) != tc.want {
				t.Fatalf("Marshal = %s, %v; want %s", b, err, tc.want)
			}
			var back AuthSet
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			for kind := range tc.set.compact() {
				if back.For(kind, 0) == nil {
					t.Errorf("%s: lost in the round trip", kind)
				}
			}
		})
	}
	out, err := AuthSet{"redis": {{Password: "pw-two-2", TLS: &TLSFiles{CA: ca}}}}.WriteTLSFiles(filepath.Join(dir))
	if err != nil {
		t.Fatal(err)
	}
	cp := out.For("redis", 0).TLS.CA
	if st, err := os.Stat(cp); err != nil || cp == ca || st.Mode().Perm() != 0o600 {
		t.Errorf("the CA's copy %s: %v, %v; want a copy of mode 0600", cp, st, err)
	}
}

// testCA writes a CA certificate in dir and returns its path.
func testCA(t *testing.T, dir string) string {
	t.Helper()
	ca, err := runca.New(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	return ca.CAFile()
}
