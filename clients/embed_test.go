package clients

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestResolve: run from a directory without this repository, an argument
// naming a shipped adapter becomes a copy of it written under dir, with
// what it needs beside it (the Python adapters' protocol loop; the Node.js
// kit's launcher, loop and adapters, whichever of them is named), each
// executable; other arguments are left as they are.
func TestResolve(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		command []string
		want    []string // files written under dir/clients
	}{
		{[]string{"/usr/bin/python3", "clients/python/kazoo_lock.py"}, []string{"python/kazoo_lock.py", "python/lt_protocol.py"}},
		{[]string{"clients/node/run.sh", "redis-lock.js"}, []string{"node/run.sh", "node/protocol.js", "node/redis-lock.js", "node/pg-lock.js"}},
		{[]string{"node", "clients/node/pg-lock.js", "xact"}, []string{"node/run.sh", "node/protocol.js", "node/redis-lock.js", "node/pg-lock.js"}},
		{[]string{"./mine", "clients/not-ours.js"}, nil},
	} {
		dir := t.TempDir()
		got, err := Resolve(tc.command, dir)
		if err != nil {
			t.Fatalf("%v: %v", tc.command, err)
		}
		for i, a := range tc.command {
			rel, ours := strings.CutPrefix(a, "clients/")
			ours = ours && slices.Contains(tc.want, rel)
			want := a
			if ours {
				want = filepath.Join(dir, "clients", rel)
			}
			if got[i] != want {
				t.Errorf("%v: argument %q became %q, want %q", tc.command, a, got[i], want)
			}
		}
		for _, f := range tc.want {
			st, err := os.Stat(filepath.Join(dir, "clients", f))
			if err != nil {
				t.Errorf("%v: %v", tc.command, err)
			} else if st.Mode()&0o111 == 0 {
				t.Errorf("%v: %s is not executable (%v)", tc.command, f, st.Mode())
			}
		}
		if tc.want == nil {
			if _, err := os.Stat(filepath.Join(dir, "clients")); err == nil {
				t.Errorf("%v: wrote files for no shipped adapter", tc.command)
			}
		}
	}
}
