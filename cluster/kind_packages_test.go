package cluster

import (
	"os"
	"strings"
	"testing"
)

// TestKindPackagesInScripts: make deps and make images install every
// registered kind's Debian packages by reading the registry (`locktorture
// list packages`), not a list of their own that a new kind would miss.
func TestKindPackagesInScripts(t *testing.T) {
	for _, script := range []string{"../scripts/deps.sh", "../scripts/images.sh"} {
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if !strings.Contains(text, "list packages") {
			t.Errorf("%s does not read the kinds' packages (locktorture list packages)", script)
		}
		if strings.Contains(text, "PACKAGES=") {
			t.Errorf("%s keeps a package list of its own (PACKAGES=)", script)
		}
	}
}
