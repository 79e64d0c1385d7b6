// Package atomicfile writes a file so that readers see the old file or the
// new one, never half of either (results.json is read while a matrix runs).
package atomicfile

import (
	"github.com/locktorture/locktorture/internal/secret"

	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to a temporary file next to path and renames
// it into place, so readers see the old file or the new one, never half.
// Every secret (package secret) in data is masked first: what is written
// down never holds one.
func Write(path string, data []byte) error {
	if secret.Any() {
		data = []byte(secret.Redact(string(data)))
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
