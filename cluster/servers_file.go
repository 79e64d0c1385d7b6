package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster/provider"
	"github.com/locktorture/locktorture/internal/secret"
)

// ServersExternal names servers someone else runs (Options, `--servers
// external --servers-file FILE`).
const ServersExternal = provider.External

// ErrServersFile is wrapped by every problem with a servers file's text:
// the user's input (exit 254).
var ErrServersFile = errors.New("bad servers file")

// ErrServerCheck is wrapped when a named server does not answer or is not
// what the file says (a replica named as a primary): the harness cannot
// run (exit 255).
var ErrServerCheck = errors.New("server check failed")

// ServersFile is a servers file: the servers someone else runs that an
// external run uses (docs/servers-file.md). Its keys are kinds of server
// (the registry's: each kind adds its own) and sentinel:
//
//	redis: [10.0.0.5:6379, 10.0.0.6:6379]          # primaries, in the order backends take them
//	sentinel: {master: mymaster, addrs: [10.0.0.9:26379]}
//	postgres: postgres://user:pass@db:5432/app       # a DSN
//	etcd: [10.0.0.7:2379]
//	zookeeper: [10.0.0.8:2181]
//
// Any server may instead be a mapping that says how to control it, so that
// server faults (server-pause, kill, failover) can act on it:
//
//	redis:
//	  - {addr: 127.0.0.1:6379, control: docker, container: lt-redis-0}
//	postgres: {dsn: postgres://..., control: docker, container: lt-postgres}
type ServersFile struct {
	// Servers are the servers by kind, in the order backends take them
	// (for a Sentinel group, its primary and replica first). A kind named
	// by a DSN has at most one.
	Servers map[string][]ServerEntry
	// Sentinel is a Sentinel group.
	Sentinel *SentinelEntry
}

// UnmarshalYAML takes a mapping from kind (or sentinel) to servers.
func (f *ServersFile) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a servers file is a mapping from kind to servers (%s:)", n.Line, strings.Join(ServersFileKeys(), ":, "))
	}
	f.Servers = map[string][]ServerEntry{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Value == SentinelKind {
			f.Sentinel = &SentinelEntry{}
			if err := val.Decode(f.Sentinel); err != nil {
				return err
			}
			continue
		}
		k, ok := LookupKind(key.Value)
		if !ok {
			return fmt.Errorf("line %d: unknown field %s (servers files take %s; a server takes addr, dsn, control, container, username, password, password_env, tls)", key.Line, RedactDSN(key.Value), strings.Join(ServersFileKeys(), ", "))
		}
		if _, dup := f.Servers[k.Name]; dup {
			return fmt.Errorf("line %d: %s is named twice", key.Line, k.Name)
		}
		var es []ServerEntry
		if _, dsn := k.Abilities.(DSNAddressed); dsn {
			var e ServerEntry
			if err := val.Decode(&e); err != nil {
				return err
			}
			es = []ServerEntry{e}
		} else if err := val.Decode(&es); err != nil {
			return err
		}
		f.Servers[k.Name] = es
	}
	return nil
}

// ServersFileKeys are the keys a servers file takes: every registered
// kind, and sentinel.
func ServersFileKeys() []string {
	keys := append(KindNames(), SentinelKind)
	sort.Strings(keys)
	return keys
}

// ServerEntry is one server of a servers file: its address (a DSN for
// PostgreSQL) and, optionally, how the harness controls it.
type ServerEntry struct {
	// Addr is host:port (or a postgres:// DSN).
	Addr string `yaml:"addr,omitempty"`
	// DSN is the same as Addr, for PostgreSQL.
	DSN string `yaml:"dsn,omitempty"`
	// Control says how server faults reach the server: "" (they cannot)
	// or "docker" (docker pause/unpause/kill/start of Container).
	Control string `yaml:"control,omitempty"`
	// Container is the container's name or id, with control: docker.
	Container string `yaml:"container,omitempty"`
	// AuthEntry is what the server asks clients to prove.
	AuthEntry `yaml:",inline"`
	line      int
}

// AuthEntry is a server's credentials as a servers file writes them: the
// password by reference only (password_env: NAME, or password: ${NAME}),
// never the secret itself.
type AuthEntry struct {
	// Username is the user (Redis: an ACL user; left out, requirepass).
	Username string `yaml:"username,omitempty"`
	// Password is "${NAME}": the password is environment variable NAME's
	// value.
	Password string `yaml:"password,omitempty"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `yaml:"password_env,omitempty"`
	// TLS makes the connection TLS with these files (relative paths are
	// the servers file's directory's).
	TLS *TLSFiles `yaml:"tls,omitempty"`
	// auth is the entry resolved (nil: the server asks for nothing).
	auth *Auth
}

// envRef is a password written as a reference: ${NAME}.
var envRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// resolve reads the password from the environment and checks the TLS
// files (relative to dir): what the entry asks for, or what is wrong with
// it (one line, naming the variable or the file — never a secret).
func (a *AuthEntry) resolve(dir string) error {
	env := a.PasswordEnv
	if a.Password != "" {
		m := envRef.FindStringSubmatch(a.Password)
		if m == nil {
			return fmt.Errorf("password must be a reference, ${NAME} or password_env: NAME (a secret is never written in a servers file)")
		}
		if env != "" && env != m[1] {
			return fmt.Errorf("password: ${%s} and password_env: %s name two variables", m[1], env)
		}
		env = m[1]
	}
	if env == "" && a.Username == "" && a.TLS == nil {
		return nil
	}
	out := &Auth{Username: a.Username}
	if env != "" {
		v, ok := os.LookupEnv(env)
		if !ok {
			return fmt.Errorf("environment variable %s is not set (it holds the password)", env)
		}
		if v == "" {
			return fmt.Errorf("environment variable %s is set but empty (it holds the password)", env)
		}
		secret.Register(v)
		out.Password, out.PasswordEnv = v, env
	}
	if a.TLS != nil {
		t := *a.TLS
		for _, f := range []*string{&t.CA, &t.Cert, &t.Key} {
			if *f != "" && !filepath.IsAbs(*f) {
				*f = filepath.Join(dir, *f)
			}
		}
		out.TLS = &t
		if _, err := out.TLSConfig(""); err != nil {
			return err
		}
	}
	a.auth = out
	return nil
}

// SentinelEntry is a Sentinel group of a servers file.
type SentinelEntry struct {
	// Master is the name the Sentinels monitor the primary under.
	Master string `yaml:"master"`
	// Addrs are the Sentinels' addresses.
	Addrs []ServerEntry `yaml:"addrs"`
	// Servers are the group's Redis servers, its primary first (optional:
	// name them, with control, for faults such as failover to reach them).
	// One that gives no credentials of its own takes MasterAuth.
	Servers []ServerEntry `yaml:"servers,omitempty"`
	// AuthEntry is what the Sentinels ask (their own requirepass or ACL
	// user, and TLS).
	AuthEntry `yaml:",inline"`
	// MasterAuth is what the monitored primary (and its replicas) ask of
	// clients the Sentinels send to them.
	MasterAuth *AuthEntry `yaml:"master_auth,omitempty"`
	line       int
}

// UnmarshalYAML takes a plain address or a mapping.
func (e *ServerEntry) UnmarshalYAML(n *yaml.Node) error {
	e.line = n.Line
	if n.Kind == yaml.ScalarNode {
		e.Addr = n.Value
		return nil
	}
	type plain ServerEntry
	var p plain
	if err := decodeStrict(n, &p); err != nil {
		return err
	}
	*e = ServerEntry(p)
	e.line = n.Line
	return nil
}

// UnmarshalYAML keeps the group's line.
func (s *SentinelEntry) UnmarshalYAML(n *yaml.Node) error {
	type plain SentinelEntry
	var p plain
	if err := decodeStrict(n, &p); err != nil {
		return err
	}
	*s = SentinelEntry(p)
	s.line = n.Line
	return nil
}

// decodeStrict decodes a mapping node into v, refusing unknown keys.
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		// The node's own lines are lost in the re-encoding: name the
		// mapping's line instead.
		msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
		msg = regexp.MustCompile(`line \d+: `).ReplaceAllString(strings.TrimSpace(msg), "")
		return fmt.Errorf("line %d: %s", n.Line, msg)
	}
	return nil
}

// address is the entry's address (or DSN).
func (e ServerEntry) address() string {
	if e.DSN != "" {
		return e.DSN
	}
	return e.Addr
}

// LoadServersFile reads and checks a servers file's text. Errors read
// "FILE:LINE: problem" and wrap ErrServersFile.
func LoadServersFile(path string) (*ServersFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrServersFile, err)
	}
	return parseServersFile(data, path)
}

// parseServersFile reads a servers file from data; source names it in errors.
func parseServersFile(data []byte, source string) (*ServersFile, error) {
	bad := func(line int, format string, a ...any) error {
		// What a value is quoted with has its password masked already
		// (RedactDSN); any other secret the file holds is masked here.
		return fmt.Errorf("%s:%d: %w: %s", source, max(line, 1), ErrServersFile, secret.Redact(fmt.Sprintf(format, a...)))
	}
	if len(data) > 1<<20 {
		return nil, bad(1, "the file is over the 1 MiB limit")
	}
	// Every password the file holds is a secret before any of it is
	// checked: a value refused, or a server that does not answer, is
	// quoted with its password masked.
	var root yaml.Node
	if yaml.Unmarshal(data, &root) == nil {
		registerPasswords(&root)
	}
	var f ServersFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, bad(1, "the file is empty: name at least one server (%s:)", strings.Join(ServersFileKeys(), ":, "))
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
		msg = strings.TrimPrefix(strings.TrimSpace(strings.SplitN(msg, "\n", 2)[0]), "yaml: ")
		line := 1
		if m := regexp.MustCompile(`^line (\d+): `).FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = strings.TrimPrefix(msg, m[0])
		}
		msg = regexp.MustCompile(`field (\S+) not found in type cluster\.\w+`).ReplaceAllString(msg, "unknown field $1 (a server takes addr, dsn, control, container, username, password, password_env, tls)")
		if m := regexp.MustCompile("cannot unmarshal !!(\\w+) (?:`(.*)` )?into (\\S+)").FindStringSubmatch(msg); m != nil {
			got := map[string]string{"seq": "a list", "map": "a mapping"}[m[1]]
			if m[2] != "" {
				got = strconv.Quote(RedactDSN(fullValue(&root, line, m[2])))
			}
			want := "a server (host:port, or a mapping with addr:)"
			if strings.HasPrefix(m[3], "[]") {
				want = "a list of servers ([host:port, ...])"
			} else if strings.Contains(m[3], "Sentinel") {
				want = "a sentinel group ({master: NAME, addrs: [host:port]})"
			}
			msg = got + " is not " + want
		}
		return nil, bad(line, "%s", msg)
	}
	named := f.Sentinel != nil
	for _, es := range f.Servers {
		named = named || len(es) > 0
	}
	if !named {
		return nil, bad(1, "no servers: name at least one (%s:)", strings.Join(ServersFileKeys(), ":, "))
	}
	dir := filepath.Dir(source)
	check := func(kind string, e *ServerEntry) error {
		a := e.address()
		k, _ := LookupKind(kind)
		d, dsn := k.Abilities.(DSNAddressed)
		switch {
		case a == "":
			return bad(e.line, "a %s server needs an address (addr: host:port)", kind)
		case dsn:
			if err := d.CheckDSN(a); err != nil {
				return bad(e.line, "%s: %v", kind, err)
			}
		default:
			if strings.Contains(a, "@") {
				return bad(e.line, "%s: %q is not host:port (a user and password go in username and password_env, not in the address)", kind, RedactDSN(a))
			}
			host, port, err := net.SplitHostPort(a)
			if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(host, "/ \t") {
				return bad(e.line, "%s: %q is not host:port (a port is a number from 1 to 65535)", kind, RedactDSN(a))
			}
		}
		if dsn {
			if err := checkDSNPorts(a); err != nil {
				return bad(e.line, "%s: %q: %v", kind, RedactDSN(a), err)
			}
		}
		switch e.Control {
		case "":
			if e.Container != "" {
				return bad(e.line, "%s %s names a container but no control (write control: docker)", kind, RedactDSN(a))
			}
		case "docker":
			if e.Container == "" {
				return bad(e.line, "%s %s: control: docker needs container: NAME", kind, RedactDSN(a))
			}
		default:
			return bad(e.line, "%s %s: unknown control %q (docker)", kind, RedactDSN(a), e.Control)
		}
		if err := e.resolve(dir); err != nil {
			return bad(e.line, "%s %s: %v", kind, RedactDSN(a), err)
		}
		if err := e.adapt(kind); err != nil {
			return bad(e.line, "%s %s: %v", kind, RedactDSN(a), err)
		}
		return nil
	}
	seen := map[string]int{}
	for _, kind := range KindNames() {
		for i := range f.Servers[kind] {
			e := &f.Servers[kind][i]
			if err := check(kind, e); err != nil {
				return nil, err
			}
			if l, dup := seen[e.address()]; dup {
				return nil, bad(e.line, "%s is named twice (first at line %d)", RedactDSN(e.address()), l)
			}
			seen[e.address()] = e.line
		}
	}
	if s := f.Sentinel; s != nil {
		if s.Master == "" {
			return nil, bad(s.line, "sentinel needs master: the name its Sentinels monitor the primary under")
		}
		if len(s.Addrs) == 0 {
			return nil, bad(s.line, "sentinel needs addrs: the Sentinels' host:port")
		}
		if err := s.AuthEntry.resolve(dir); err != nil {
			return nil, bad(s.line, "sentinel: %v", err)
		}
		if s.MasterAuth != nil {
			if err := s.MasterAuth.resolve(dir); err != nil {
				return nil, bad(s.line, "sentinel master_auth: %v", err)
			}
		}
		for i := range s.Addrs {
			e := &s.Addrs[i]
			if err := check(SentinelKind, e); err != nil {
				return nil, err
			}
			if e.auth == nil {
				e.auth = s.auth
			}
		}
		for i := range s.Servers {
			e := &s.Servers[i]
			if err := check(redisKind, e); err != nil {
				return nil, err
			}
			if e.auth == nil {
				e.auth = s.PrimaryAuth()
			}
		}
	}
	return &f, nil
}

// addrs are the entries' addresses.
func addrs(es []ServerEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.address())
	}
	return out
}

// PrimaryAuth is what the group's primary asks (nil: nothing): its
// MasterAuth, resolved.
func (s *SentinelEntry) PrimaryAuth() *Auth {
	if s.MasterAuth == nil {
		return nil
	}
	return s.MasterAuth.auth
}

// Endpoints are the entries as the harness dials them.
func Endpoints(es []ServerEntry) []Endpoint {
	var out []Endpoint
	for _, e := range es {
		out = append(out, Endpoint{Addr: e.address(), Auth: e.auth})
	}
	return out
}

// ServerSet is what the file names, as an external cluster takes it.
func (f *ServersFile) ServerSet() ServerSet {
	g := ServerSet{Auth: AuthSet{}}
	for kind, es := range f.Servers {
		for _, e := range es {
			g.add(kind, e.address())
			g.Auth.Add(kind, e.auth)
		}
	}
	if s := f.Sentinel; s != nil {
		g.Sentinel = &SentinelSet{Master: s.Master, Addrs: addrs(s.Addrs), Servers: addrs(s.Servers), MasterAuth: s.PrimaryAuth()}
		for _, e := range s.Addrs {
			g.Auth.Add(SentinelKind, e.auth)
		}
		for _, e := range s.Servers {
			g.Sentinel.ServersAuth = append(g.Sentinel.ServersAuth, e.auth)
		}
	}
	g.Auth = g.Auth.compact()
	return g
}

// Controls maps each controlled server's address (a DSN for PostgreSQL)
// to its container.
func (f *ServersFile) Controls() map[string]string {
	out := map[string]string{}
	add := func(es ...ServerEntry) {
		for _, e := range es {
			if e.Control == "docker" {
				out[e.address()] = e.Container
			}
		}
	}
	for _, es := range f.Servers {
		add(es...)
	}
	if f.Sentinel != nil {
		add(f.Sentinel.Addrs...)
		add(f.Sentinel.Servers...)
	}
	return out
}

// Uncontrolled lists the servers of the kinds given that the file gives no
// control for ("redis 10.0.0.5:6379"): server faults cannot act on them.
// With sentinel, the Redis servers are the Sentinel group's.
func (f *ServersFile) Uncontrolled(kinds []string, sentinel bool) []string {
	var out []string
	for _, kind := range kinds {
		es := f.Servers[kind]
		if kind == redisKind && sentinel {
			if f.Sentinel == nil || len(f.Sentinel.Servers) == 0 {
				out = append(out, "the Sentinel group's Redis servers (name them under sentinel: servers:)")
				continue
			}
			es = f.Sentinel.Servers
		}
		for _, e := range es {
			if e.Control == "" {
				out = append(out, kind+" "+RedactDSN(e.address()))
			}
		}
	}
	return out
}

// RedactDSN hides the password a server's address or DSN carries, in
// any form (a URL's user info or query password=, libpq's key=value
// password=, user:password@tcp(host)/db, user:password@host:port), as
// xxxxx: the rest is left as written.
func RedactDSN(s string) string { return secret.RedactDSN(s, "xxxxx") }

// registerPasswords makes a secret (secret.Register) every password a
// servers file's YAML holds: in any value that is a DSN or address
// (secret.DSNPasswords), and a password key's value written in the file
// rather than by reference (which the file's check then refuses).
func registerPasswords(n *yaml.Node) {
	switch n.Kind {
	case yaml.ScalarNode:
		for _, pw := range secret.DSNPasswords(n.Value) {
			secret.Register(pw)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			registerPasswords(k)
			switch {
			case k.Value == "password" && v.Kind == yaml.ScalarNode && !envRef.MatchString(v.Value):
				secret.Register(v.Value)
			case !notAddress[k.Value]:
				registerPasswords(v)
			}
		}
	default:
		for _, c := range n.Content {
			registerPasswords(c)
		}
	}
}

// notAddress are the keys of a servers file whose values are no address
// (a user's name such as me@example is not a password).
var notAddress = map[string]bool{"username": true, "password_env": true, "master": true, "control": true, "container": true, "tls": true}

// fullValue is the whole of a scalar YAML quotes cut short in an error
// ("u:passw..."): the first scalar of root at line that starts as quoted
// does (quoted itself when none is found).
func fullValue(root *yaml.Node, line int, quoted string) string {
	prefix, cut := strings.CutSuffix(quoted, "...")
	if !cut {
		return quoted
	}
	var found string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if found != "" {
			return
		}
		if n.Kind == yaml.ScalarNode && n.Line == line && strings.HasPrefix(n.Value, prefix) {
			found = n.Value
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	if found == "" {
		return quoted
	}
	return found
}

// checkDSNPorts says what is wrong with the ports of a DSN (a URL): each
// host's port, when given, is a number from 1 to 65535.
func checkDSNPorts(dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil // the kind's own check says what is wrong
	}
	for _, h := range strings.Split(u.Host, ",") {
		_, port, err := net.SplitHostPort(h)
		if err != nil {
			continue // no port: the kind's default
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %s is not a number from 1 to 65535", port)
		}
	}
	return nil
}

// checkError is a server check's error as it is printed: its text with
// the passwords masked, on one line; errors.Is and As see what it wraps.
type checkError struct {
	text string
	err  error
}

func (e *checkError) Error() string { return e.text }
func (e *checkError) Unwrap() error { return e.err }

// redactCheck masks in err's text the passwords of the addresses given
// (wherever the address is quoted) and every secret, and puts the lines
// of what a server said (a driver's several attempts) on one.
func redactCheck(err error, addrs ...string) error {
	text := err.Error()
	for _, a := range addrs {
		if r := RedactDSN(a); r != a {
			text = strings.ReplaceAll(text, a, r)
		}
	}
	text = secret.Redact(text)
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return &checkError{text: b.String(), err: err}
}

// Check asks every server the file names for the kinds a run needs
// whether it answers and is what the file says (each kind's Checker: a
// Redis server is a primary, PostgreSQL takes a connection, etcd and
// ZooKeeper answer; with sentinel, the Sentinels know the master). The
// first problem is returned, wrapping ErrServerCheck and naming the
// server.
func (f *ServersFile) Check(ctx context.Context, kinds []string, sentinel bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, kind := range kinds {
		if kind == redisKind && sentinel {
			if err := f.checkSentinel(ctx); err != nil {
				return err
			}
			continue
		}
		es := f.Servers[kind]
		if len(es) == 0 {
			return fmt.Errorf("%w: the backend uses %s, but the servers file names none", ErrServerCheck, kind)
		}
		k, _ := LookupKind(kind)
		c, ok := k.Abilities.(Checker)
		if !ok {
			continue
		}
		for _, e := range Endpoints(es) {
			if err := c.Check(ctx, e); err != nil {
				return redactCheck(fmt.Errorf("%w: %s %s: %w", ErrServerCheck, kind, RedactDSN(e.Addr), err), e.Addr)
			}
		}
	}
	return nil
}

// checkSentinel asks each Sentinel of the file's group whether it knows
// the master.
func (f *ServersFile) checkSentinel(ctx context.Context) error {
	s := f.Sentinel
	if s == nil {
		return fmt.Errorf("%w: the run uses Redis Sentinel, but the servers file names no sentinel group", ErrServerCheck)
	}
	k, _ := LookupKind(redisKind)
	if g, ok := k.Abilities.(SentinelGroup); ok {
		if err := g.CheckSentinel(ctx, Endpoints(s.Addrs), s.Master, s.PrimaryAuth()); err != nil {
			return redactCheck(err, append(addrs(s.Addrs), addrs(s.Servers)...)...)
		}
	}
	return nil
}

// SentinelKind is the servers file's key of a Sentinel group (and the
// kind its Sentinels go by): the group belongs to the Redis kind.
const SentinelKind = "sentinel"

// adapt turns the entry's credentials into what its kind's clients take:
// its kind's Credentialer (ZooKeeper's digest); PostgreSQL's DSN
// (the user and password in it, TLS as sslmode=verify-full, sslrootcert,
// sslcert and sslkey — PostgreSQL keeps its credentials in its DSN).
func (e *ServerEntry) adapt(kind string) error {
	a := e.auth
	if a == nil {
		return nil
	}
	k, _ := LookupKind(kind)
	c, ok := k.Abilities.(Credentialer)
	if !ok {
		return nil
	}
	addr, na, err := c.Credentials(e.address(), a)
	if err != nil {
		return err
	}
	if addr != e.address() {
		if e.DSN != "" {
			e.DSN = addr
		} else {
			e.Addr = addr
		}
	}
	e.auth = na
	return nil
}
