package cluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/locktorture/locktorture/internal/owner"
	"github.com/locktorture/locktorture/internal/secret"
)

// Auth is what a server asks a client to prove — any kind's: a username
// and password (Redis ACL user or requirepass, a Sentinel's own password,
// etcd's user, ZooKeeper's digest user, PostgreSQL's role) and TLS files.
// The zero value and nil ask for nothing. In the client protocol it is one
// entry of the open request's auth object (docs/client-protocol.md).
type Auth struct {
	// Username is the user (empty: Redis's requirepass).
	Username string `json:"username,omitempty"`
	// Password is the secret itself (registered with package secret, so
	// it is never written down).
	Password string `json:"password,omitempty"`
	// TLS, when set, makes the connection TLS with these files.
	TLS *TLSFiles `json:"tls,omitempty"`
	// PasswordEnv names the environment variable Password came from (a
	// servers file's reference; not a secret): what a journal's undo
	// reads the password from again. Not part of the protocol.
	PasswordEnv string `json:"-"`
	// Scheme and Digest are ZooKeeper's AddAuth arguments ("digest",
	// "user:pass"), in the protocol as scheme and auth.
	Scheme string `json:"scheme,omitempty"`
	Digest string `json:"auth,omitempty"`
}

// TLSFiles are a TLS client's files (PEM) and how it checks the server.
type TLSFiles struct {
	// CA is the certificate authority the server's certificate is checked
	// against (empty: the system's roots).
	CA string `json:"ca,omitempty" yaml:"ca,omitempty"`
	// Cert and Key are the client's certificate and key, for servers that
	// ask for one (mutual TLS).
	Cert string `json:"cert,omitempty" yaml:"cert,omitempty"`
	Key  string `json:"key,omitempty" yaml:"key,omitempty"`
	// ServerName is the name the server's certificate must carry (empty:
	// the host of the server's own address, also through a link).
	ServerName string `json:"server_name,omitempty" yaml:"server_name,omitempty"`
	// InsecureSkipVerify accepts any certificate (a test server's).
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty" yaml:"insecure_skip_verify,omitempty"`
}

// Endpoint is one server as the harness dials it: its address and what
// it asks a client to prove.
type Endpoint struct {
	Addr string
	Auth *Auth
}

// empty reports whether a asks for nothing.
func (a *Auth) empty() bool {
	return a == nil || (a.Username == "" && a.Password == "" && a.TLS == nil && a.Scheme == "")
}

// TLSConfig is the TLS client configuration a's files give for the
// server whose own address is addr (nil, nil: no TLS). Its ServerName is
// TLS.ServerName, else addr's host, so a client dialling the server
// through a link (another address) still checks the server's name.
func (a *Auth) TLSConfig(addr string) (*tls.Config, error) {
	if a == nil || a.TLS == nil {
		return nil, nil
	}
	t := a.TLS
	cfg := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // the user's choice, for test servers
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca %s: no PEM certificate in it", t.CA)
		}
		cfg.RootCAs = pool
	}
	if t.Cert != "" || t.Key != "" {
		if t.Cert == "" || t.Key == "" {
			return nil, errors.New("tls: cert and key go together")
		}
		// Each file is read on its own, so that a missing one is named.
		cert, err := os.ReadFile(t.Cert)
		if err != nil {
			return nil, fmt.Errorf("tls cert %s: %w", t.Cert, err)
		}
		key, err := os.ReadFile(t.Key)
		if err != nil {
			return nil, fmt.Errorf("tls key %s: %w", t.Key, err)
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tls cert %s and key %s: %w", t.Cert, t.Key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// WithServerName is a copy of a whose TLS names the server at its own
// address addr (when TLS gives no name): what a client given another
// address (a link's) needs to check the server's certificate.
func (a *Auth) WithServerName(addr string) *Auth {
	if a == nil || a.TLS == nil || a.TLS.ServerName != "" {
		return a
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return a
	}
	c := *a
	t := *a.TLS
	t.ServerName = host
	c.TLS = &t
	return &c
}

// JournalArgs are a's credentials as a journal's undo can write them
// down: the user, the variable holding the password (never the password)
// and the TLS files.
func (a *Auth) JournalArgs(args map[string]string) map[string]string {
	if a == nil {
		return args
	}
	args["username"], args["password_env"] = a.Username, a.PasswordEnv
	if t := a.TLS; t != nil {
		args["tls_ca"], args["tls_cert"], args["tls_key"], args["tls_server_name"] = t.CA, t.Cert, t.Key, t.ServerName
		if t.InsecureSkipVerify {
			args["tls_insecure"] = "true"
		}
	}
	return args
}

// AuthFromJournal is what JournalArgs wrote, the password read again from
// its variable (nil: no credentials).
func AuthFromJournal(args map[string]string) *Auth {
	a := &Auth{Username: args["username"], PasswordEnv: args["password_env"]}
	if a.PasswordEnv != "" {
		a.Password = os.Getenv(a.PasswordEnv)
		secret.Register(a.Password)
	}
	if args["tls_ca"] != "" || args["tls_cert"] != "" || args["tls_insecure"] != "" {
		a.TLS = &TLSFiles{CA: args["tls_ca"], Cert: args["tls_cert"], Key: args["tls_key"], ServerName: args["tls_server_name"],
			InsecureSkipVerify: args["tls_insecure"] == "true"}
	}
	if a.empty() {
		return nil
	}
	return a
}

// authed is a server that asks its clients for credentials.
type authed interface {
	Auth() *Auth
}

// AuthOf is what server s asks its clients to prove (nil: nothing).
func AuthOf(s Server) *Auth {
	if a, ok := s.(authed); ok {
		return a.Auth()
	}
	return nil
}

// AuthSet is the client protocol's auth object: by kind ("redis",
// "sentinel", "etcd", "zookeeper"), the credentials of every server of
// the kind (one entry) or of each, in the order of its addresses.
type AuthSet map[string][]*Auth

// For is what server i of kind asks for (nil: nothing).
func (s AuthSet) For(kind string, i int) *Auth {
	l := s[kind]
	switch {
	case len(l) == 1:
		return l[0]
	case i >= 0 && i < len(l):
		return l[i]
	}
	return nil
}

// Add appends the next server of kind's credentials (nil: none).
func (s AuthSet) Add(kind string, a *Auth) {
	s[kind] = append(s[kind], a)
}

// compact drops kinds whose servers ask for nothing.
func (s AuthSet) compact() AuthSet {
	out := AuthSet{}
	for kind, l := range s {
		for _, a := range l {
			if !a.empty() {
				out[kind] = l
				break
			}
		}
	}
	return out
}

// MarshalJSON writes each kind as one object when its servers ask for the
// same, else as a list in the order of the addresses (null for a server
// that asks for nothing).
func (s AuthSet) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for kind, l := range s.compact() {
		same := true
		first, _ := json.Marshal(l[0])
		for _, a := range l[1:] {
			b, _ := json.Marshal(a)
			same = same && bytes.Equal(b, first)
		}
		if same {
			m[kind] = l[0]
		} else {
			m[kind] = l
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads an object or a list per kind, and registers every
// password it reads as a secret.
func (s *AuthSet) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = AuthSet{}
	for kind, raw := range m {
		var l []*Auth
		if err := json.Unmarshal(raw, &l); err != nil {
			var one Auth
			if err := json.Unmarshal(raw, &one); err != nil {
				return fmt.Errorf("auth.%s: %w", kind, err)
			}
			l = []*Auth{&one}
		}
		for _, a := range l {
			if a != nil {
				secret.Register(a.Password)
				secret.Register(a.Digest)
			}
		}
		(*s)[kind] = l
	}
	return nil
}

// WriteTLSFiles copies every TLS file the set names into dir (mode 0600;
// dir is the run's private temporary directory) and returns the set
// naming the copies: what a client process is given. Files of the same
// source are copied once.
func (s AuthSet) WriteTLSFiles(dir string) (AuthSet, error) {
	copied := map[string]string{}
	cp := func(src string) (string, error) {
		if src == "" {
			return "", nil
		}
		if dst, ok := copied[src]; ok {
			return dst, nil
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return "", fmt.Errorf("tls: %w", err)
		}
		dst := filepath.Join(dir, fmt.Sprintf("tls-%d-%s", len(copied), filepath.Base(src)))
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			return "", fmt.Errorf("tls: %w", err)
		}
		copied[src] = dst
		return dst, nil
	}
	out := AuthSet{}
	for kind, l := range s.compact() {
		for _, a := range l {
			if a == nil || a.TLS == nil {
				out.Add(kind, a)
				continue
			}
			c, t := *a, *a.TLS
			var err error
			for _, f := range []*string{&t.CA, &t.Cert, &t.Key} {
				if *f, err = cp(*f); err != nil {
					return nil, err
				}
			}
			c.TLS = &t
			out.Add(kind, &c)
		}
	}
	return out, nil
}

// PrivateDir makes a directory only its owner can read (0700) under
// parent (empty: the system's), named so that, if the harness dies before
// removing it, a later run removes it (SweepLeftovers): where TLS files
// given to client processes go.
func PrivateDir(parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, owner.TempPattern)
	if err != nil {
		return "", fmt.Errorf("cluster: private dir: %w", err)
	}
	if err := owner.Mark(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
