package cluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestParseServersFile: a good file gives its servers; every bad one is
// one line naming the file, the line and the problem.
func TestParseServersFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int    // 0: accepted
		has  string // what the problem names
	}{
		{"every kind", "redis: [127.0.0.1:6379, 127.0.0.1:6380]\nsentinel: {master: mymaster, addrs: [127.0.0.1:26379]}\npostgres: postgres://u:p@127.0.0.1:5432/db\netcd: [127.0.0.1:2379]\nzookeeper: [127.0.0.1:2181]\n", 0, ""},
		{"controlled", "redis:\n  - {addr: 127.0.0.1:6379, control: docker, container: r0}\npostgres: {dsn: postgres://u@h:5432/d, control: docker, container: pg}\n", 0, ""},
		{"empty", "", 1, "empty"},
		{"no servers", "redis: []\n", 1, "no servers"},
		{"unknown top-level field", "redis: [127.0.0.1:6379]\nmysql: [x]\n", 2, "unknown field mysql"},
		{"unknown server field", "redis:\n  - {addr: 127.0.0.1:6379, colour: red}\n", 2, "unknown field colour"},
		{"not host:port", "redis: [localhost]\n", 1, `"localhost" is not host:port`},
		{"a port that is not a number", "redis: [\"127.0.0.1:notaport\"]\n", 1, `"127.0.0.1:notaport" is not host:port`},
		{"a port out of range", "etcd: [127.0.0.1:70000]\n", 1, `"127.0.0.1:70000" is not host:port`},
		{"not a DSN", "postgres: 127.0.0.1:5432\n", 1, "not a DSN"},
		{"a DSN's port out of range", "postgres: postgres://u@127.0.0.1:99999/d\n", 1, `"postgres://u@127.0.0.1:99999/d": port 99999 is not a number from 1 to 65535`},
		{"a MariaDB DSN's port out of range", "mariadb: {dsn: 'mariadb://u@db:0/d'}\n", 1, "port 0 is not"},
		{"user info before host:port", "redis: [\"u:pw@127.0.0.1:6379\"]\n", 1, `"u:xxxxx@127.0.0.1:6379" is not host:port`},
		{"control without container", "etcd:\n  - {addr: 127.0.0.1:2379, control: docker}\n", 2, "needs container"},
		{"container without control", "etcd:\n  - {addr: 127.0.0.1:2379, container: e0}\n", 2, "no control"},
		{"unknown control", "etcd:\n  - {addr: 127.0.0.1:2379, control: ssh, container: e0}\n", 2, `unknown control "ssh"`},
		{"a server twice", "redis: [127.0.0.1:6379, 127.0.0.1:6379]\n", 1, "named twice"},
		{"sentinel without master", "sentinel: {addrs: [127.0.0.1:26379]}\n", 1, "needs master"},
		{"sentinel without addrs", "sentinel: {master: m}\n", 1, "needs addrs"},
		{"not YAML", "redis: [unclosed\n", 1, ""},
		{"a list where a DSN goes", "postgres: [a, b]\n", 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseServersFile([]byte(tc.in), "s.yaml")
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if g := f.ServerSet(); len(g.Addrs("redis")) == 0 && len(g.Addrs("postgres")) == 0 {
					t.Errorf("ServerSet() = %+v: the servers are lost", g)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want a problem at line %d naming %q", tc.line, tc.has)
			}
			if !errors.Is(err, ErrServersFile) {
				t.Errorf("%v does not wrap ErrServersFile", err)
			}
			if want := "s.yaml:" + itoa(tc.line) + ":"; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%v: want it to start %q", err, want)
			}
			if !strings.Contains(err.Error(), tc.has) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v: want one line naming %q", err, tc.has)
			}
		})
	}
}

// TestServersFileControls: controls and the uncontrolled servers a run
// would need for server faults; a DSN's password never shows.
func TestServersFileControls(t *testing.T) {
	f, err := parseServersFile([]byte("redis:\n  - {addr: 127.0.0.1:6379, control: docker, container: r0}\n  - 127.0.0.1:6380\npostgres: postgres://u:secret@h:5432/d\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c := f.Controls(); c["127.0.0.1:6379"] != "r0" || len(c) != 1 {
		t.Errorf("Controls() = %v", c)
	}
	got := strings.Join(f.Uncontrolled([]string{"redis", "postgres"}, false), "; ")
	if !strings.Contains(got, "redis 127.0.0.1:6380") || !strings.Contains(got, "postgres postgres://u:xxxxx@h:5432/d") || strings.Contains(got, "secret") || strings.Contains(got, "6379") {
		t.Errorf("Uncontrolled = %q", got)
	}
	if u := f.Uncontrolled([]string{"etcd"}, false); len(u) != 0 {
		t.Errorf("Uncontrolled(etcd) = %v, want none", u)
	}
}

// TestServersFileKindCredentials: ZooKeeper's username and password
// become its digest; PostgreSQL's go into its DSN, TLS as
// sslmode=verify-full with the files; what a kind cannot take is one line.
func TestServersFileKindCredentials(t *testing.T) {
	t.Setenv("LT_KC_PW", "s3cret")
	tests := []struct {
		name, file string
		kind       string
		addr       string // the address the run dials ("": refused)
		auth       *Auth
		has        string // what the refusal names
	}{
		{"zookeeper digest", "zookeeper: [{addr: 10.0.0.8:2181, username: lt, password_env: LT_KC_PW}]\n", "zookeeper",
			"10.0.0.8:2181", &Auth{Scheme: "digest", Digest: "lt:s3cret"}, ""},
		{"zookeeper without a password", "zookeeper: [{addr: 10.0.0.8:2181, username: lt}]\n", "zookeeper", "", nil, "both username and password_env"},
		{"zookeeper tls", "zookeeper: [{addr: 10.0.0.8:2181, tls: {insecure_skip_verify: true}}]\n", "zookeeper", "", nil, "tls is not supported for ZooKeeper"},
		{"postgres password and tls", "postgres: {dsn: 'postgres://lt@db:5432/app', password_env: LT_KC_PW, tls: {insecure_skip_verify: true}}\n", "postgres",
			"postgres://lt:s3cret@db:5432/app?sslmode=require", nil, ""},
		{"postgres server_name", "postgres: {dsn: 'postgres://lt@db:5432/app', tls: {server_name: db.example, insecure_skip_verify: true}}\n", "postgres", "", nil, "server_name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseServersFile([]byte(tc.file), "s.yaml")
			if tc.addr == "" {
				if err == nil || !strings.Contains(err.Error(), tc.has) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %v, want one line naming %q", err, tc.has)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := f.ServerSet()
			if got := g.Addrs(tc.kind); len(got) != 1 || got[0] != tc.addr {
				t.Errorf("addresses %v, want %s", got, tc.addr)
			}
			if got := g.Auth.For(tc.kind, 0); !reflect.DeepEqual(got, tc.auth) {
				t.Errorf("auth %+v, want %+v", got, tc.auth)
			}
		})
	}
}
