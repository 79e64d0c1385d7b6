package clientprotocol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/secret"
)

// TestCapLogMasksSecrets: a secret the run knows is masked in a client's
// log, also when the client wrote it in two pieces.
func TestCapLogMasksSecrets(t *testing.T) {
	const pw = "caplog-test-secret-9f2c"
	secret.Register(pw)
	for _, tc := range []struct {
		name   string
		writes []string
	}{
		{"one write", []string{"open: password " + pw + "\n"}},
		{"split between writes", []string{"open: password " + pw[:7], pw[7:] + "\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "client-0.log"))
			if err != nil {
				t.Fatal(err)
			}
			c := newCapLog(f, logCap)
			for _, w := range tc.writes {
				if _, err := c.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.finish(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), pw) || !strings.Contains(string(b), "open: password "+secret.Mask) {
				t.Errorf("log %q", b)
			}
		})
	}
}
