// Package testenv tells integration tests whether the servers they need are
// installed. A test on a machine without them skips — unless CI is set,
// where a skipped integration test would hide a broken install and turn a
// missing server into a green build: there it fails.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Missing ends t for a missing dependency what: Skip, or Fatal under CI.
func Missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not installed, and CI is set: CI must test against real servers (make deps)", what)
	}
	t.Skipf("%s not installed (make deps)", what)
}

// Has reports whether the program name is installed: on PATH, or where
// Debian's packages put the servers' programs off PATH, the places the
// harness looks too (/usr/sbin: pgbouncer, mariadbd;
// /usr/lib/postgresql/*/bin: postgres, initdb).
func Has(name string) bool {
	if name == "" {
		return false
	}
	if _, err := exec.LookPath(name); err == nil {
		return true
	}
	for _, dir := range []string{"/usr/sbin", "/usr/lib/postgresql/*/bin"} {
		if m, _ := filepath.Glob(filepath.Join(dir, name)); len(m) > 0 {
			return true
		}
	}
	return false
}

// Require ends t (see Missing) unless every program named is installed.
func Require(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if !Has(n) {
			Missing(t, n)
		}
	}
}
