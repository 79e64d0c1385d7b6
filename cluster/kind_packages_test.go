package cluster

import (
	"os"
	"strings"
	"testing"
)

// TestKindPackagesInScripts: make deps and make images install every
// registered kind's Debian packages (the scripts are shell; the registry
// is where a kind says which packages it needs).
func TestKindPackagesInScripts(t *testing.T) {
	for _, script := range []string{"../scripts/deps.sh", "../scripts/images.sh"} {
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, k := range Kinds() {
			for _, p := range k.Packages {
				if !strings.Contains(text, p) {
					t.Errorf("%s does not install %s, which the %s kind needs", script, p, k.Name)
				}
			}
		}
	}
}
