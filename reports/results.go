package reports

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/atomicfile"
)

// writeFileAtomic writes data to path atomically (see atomicfile.Write).
func writeFileAtomic(path string, data []byte) error { return atomicfile.Write(path, data) }

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
