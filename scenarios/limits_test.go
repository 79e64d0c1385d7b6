package scenarios_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/scenarios"
)

// TestLimits: input past the size limits is refused before it is decoded
// (yaml.v3 compares every pair of keys of a mapping: 70,000 keys would
// take it seconds, 900,000 minutes).
func TestLimits(t *testing.T) {
	steps := func(n int) string {
		var b strings.Builder
		b.WriteString(base + "nemesis:\n  script:\n")
		for range n {
			b.WriteString("    - {fault: pause, process: 0, for: 1s}\n")
		}
		return b.String()
	}
	settings := func(n int) string {
		var b strings.Builder
		b.WriteString(base + "postgres:\n  settings:\n")
		for i := range n {
			fmt.Fprintf(&b, "    k%d: v\n", i)
		}
		return b.String()
	}
	// An alias bomb: 10 * 10 * 10 * 10 * 10 * 10 strings.
	bomb := base + "description: x\nexpect:\n  checkers:\n" +
		"    a: &a [x, x, x, x, x, x, x, x, x, x]\n" +
		"    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
		"    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n" +
		"    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n" +
		"    f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
	tests := []struct {
		name string
		in   string
		line int
		has  string
	}{
		{"a file over 1 MiB", base + "description: " + strings.Repeat("x", 1<<20) + "\n", 1, "1 MiB"},
		{"10001 nemesis steps", steps(10001), 4, "10000"},
		{"70000 postgres settings", settings(70000), 4, "1000"},
		{"1001 postgres settings", settings(1001), 4, "postgres.settings"},
		{"100001 keys", base + "keys: 100001\n", 3, "100000"},
		{"1001 clients", base + "clients: 1001\n", 3, "1000"},
		{"an alias bomb", bomb, 1, "aliases"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, tc.in, tc.line, tc.has)
		})
	}
	// At the limits, a file is read.
	if _, err := scenarios.Parse([]byte(steps(10000)), "f.yaml"); err != nil {
		t.Errorf("10000 steps: %v", err)
	}
	if _, err := scenarios.Parse([]byte(settings(1000)), "f.yaml"); err != nil {
		t.Errorf("1000 settings: %v", err)
	}
}

// TestLoadFileTooLarge: LoadFile does not read a file past the limit
// (a path like /dev/zero never ends).
func TestLoadFileTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, []byte(base+"description: "+strings.Repeat("x", 2<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := scenarios.LoadFile(p)
	if !errors.Is(err, scenarios.ErrInvalid) || !strings.HasPrefix(err.Error(), p+":1: ") || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("LoadFile(2 MiB) = %v", err)
	}
	if _, err := scenarios.LoadFile(filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, scenarios.ErrInvalid) {
		t.Errorf("LoadFile(missing) = %v", err)
	}
}
