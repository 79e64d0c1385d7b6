package reports

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/locktorture/locktorture/checker"
)

// writeFileAtomic writes data to a temporary file next to path and renames
// it into place, so readers see the old file or the new one, never half.
func writeFileAtomic(path string, data []byte) error {
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

// WriteResults writes res to path as indented JSON (the results.json
// contract), atomically: a reader never sees a half-written file.
func WriteResults(path string, res *checker.Results) error {
	if res == nil {
		return fmt.Errorf("%s: no results to write", path)
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: encode results: %w", path, err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// ReadResults reads a results.json written by WriteResults (or by any tool
// following the contract).
func ReadResults(path string) (*checker.Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var res checker.Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &res, nil
}
