package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestComposeFilesAreWritten: the repository's docker-compose.yml and
// compose.servers.yaml are what `locktorture compose` writes from the
// registered kinds (a kind added without them written again fails here),
// and bad flags exit 254 writing nothing.
func TestComposeFilesAreWritten(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"compose", "--dir", dir}, &out, &errb); code != exitValid {
		t.Fatalf("compose exited %d: %s", code, errb.String())
	}
	for _, name := range []string{"docker-compose.yml", "compose.servers.yaml"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("%s is not what `locktorture compose` writes: run `go run ./cmd/locktorture compose` at the repository's root", name)
		}
	}
	tests := []struct {
		name string
		args []string
	}{
		{"unknown kind", []string{"compose", "--dir", t.TempDir(), "--image", "nope=redis:7.4"}},
		{"bad reference", []string{"compose", "--dir", t.TempDir(), "--image", "redis=Not An Image"}},
		{"argument", []string{"compose", "extra"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != exitBadArgs {
				t.Fatalf("exit %d, want %d (%s)", code, exitBadArgs, errb.String())
			}
			if len(tt.args) > 2 {
				if es, _ := os.ReadDir(tt.args[2]); len(es) != 0 {
					t.Errorf("wrote %d files", len(es))
				}
			}
		})
	}
}
