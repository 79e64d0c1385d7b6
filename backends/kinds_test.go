package backends

import (
	"strings"
	"testing"
)

// TestEveryBackendSaysItsServers: Kinds is required, and agrees with what
// `list backends` tells the user.
func TestEveryBackendSaysItsServers(t *testing.T) {
	for _, b := range List() {
		if b.Kinds == nil {
			t.Errorf("%s: no Kinds", b.Name)
		}
		for _, k := range b.Kinds {
			if !strings.Contains(strings.ToLower(b.Servers), k) {
				t.Errorf("%s: Kinds has %q but Servers says %q", b.Name, k, b.Servers)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a backend without Kinds was registered")
		}
	}()
	Register(Info{Name: "no-kinds-" + t.Name()}, nil)
}
