package runca

import (
	"crypto/tls"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// serve answers one TLS connection at a time on 127.0.0.1, requiring a
// client certificate from ca, and echoes a byte.
func serve(t *testing.T, ca *CA, srv Pair) string {
	t.Helper()
	cert, err := srv.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    ca.pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 1)
				if _, err := io.ReadFull(c, b); err == nil {
					_, _ = c.Write(b)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestHandshake(t *testing.T) {
	ca, err := New(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server("redis-0", "redis-0.lt")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client("client", "root")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.Client("client", "root")
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, ca, srv)
	for _, tc := range []struct {
		name       string
		serverName string
		roots      *CA
		cert       *Pair
		ok         bool
	}{
		{"ip", "127.0.0.1", ca, &client, true},
		{"localhost", "localhost", ca, &client, true},
		{"container host name", "redis-0.lt", ca, &client, true},
		{"a name the certificate does not hold", "redis.example", ca, &client, false},
		{"another run's CA as roots", "127.0.0.1", other, &client, false},
		{"no client certificate", "127.0.0.1", ca, nil, false},
		{"a client certificate of another run's CA", "127.0.0.1", ca, &stranger, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &tls.Config{RootCAs: tc.roots.pool(), ServerName: tc.serverName}
			if tc.cert != nil {
				c, err := tc.cert.TLSCertificate()
				if err != nil {
					t.Fatal(err)
				}
				cfg.Certificates = []tls.Certificate{c}
			}
			err := exchange(addr, cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("exchange: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// exchange dials addr with cfg and sends and reads back a byte (with TLS
// 1.3 a refused client certificate shows only at the first read).
func exchange(addr string, cfg *tls.Config) error {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte{'x'}); err != nil {
		return err
	}
	_, err = io.ReadFull(c, make([]byte, 1))
	return err
}

func TestFiles(t *testing.T) {
	old := setUmask(0)
	defer setUmask(old)
	dir := filepath.Join(t.TempDir(), "tls")
	ca, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Server("etcd-0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Server("etcd-0"); err == nil {
		t.Error("a second certificate of the same name overwrote the first")
	}
	for _, bad := range []string{"", "ca", "../x", "a/b", ".hidden"} {
		if _, err := ca.Client(bad, "u"); err == nil {
			t.Errorf("Client(%q) made files", bad)
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v, want 0700", dir, st.Mode().Perm())
	}
	for _, f := range []string{ca.CAFile(), p.CertFile, p.KeyFile} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	if err := ca.remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Remove: %v", dir, err)
	}
}

// setUmask sets the process's umask and returns the old one.
func setUmask(m int) int { return syscall.Umask(m) }
