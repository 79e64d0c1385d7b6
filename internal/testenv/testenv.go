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

// Has reports whether the program name is installed: on PATH, or (for
// postgres, mariadbd, pgbouncer) where Debian's packages put it.
func Has(name string) bool {
	if _, err := exec.LookPath(name); err == nil {
		return true
	}
	switch name {
	case "pgbouncer":
		_, err := os.Stat("/usr/sbin/pgbouncer")
		return err == nil
	case "postgres":
		m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
		return len(m) > 0
	case "mariadbd":
		_, err := os.Stat("/usr/sbin/mariadbd")
		return err == nil
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
