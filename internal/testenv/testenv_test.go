package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHas: a program on PATH is had, and so is one only where Debian puts
// servers off PATH; a name of nothing installed, or none, is not.
func TestHas(t *testing.T) {
	offPath := ""
	for _, pattern := range []string{"/usr/sbin/*", "/usr/lib/postgresql/*/bin/*"} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			offPath = filepath.Base(m[0])
			break
		}
	}
	for _, c := range []struct {
		name string
		want bool
	}{
		{"sh", true},
		{"locktorture-no-such-program", false},
		{"", false},
		{offPath, offPath != ""},
	} {
		if got := Has(c.name); got != c.want {
			t.Errorf("Has(%q) = %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil && !Has("pgbouncer") {
		t.Error("pgbouncer is in /usr/sbin, but Has says no")
	}
}
