package runner

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
)

// libraryOf is results.json's library for a backend that drives a
// third-party library (nil for one of ours): its name and language as the
// backend registers them, its version read from this program's build
// information now, never written by hand.
func libraryOf(backend string) *checker.Library {
	info, _, err := backends.Lookup(backend)
	if err != nil || info.Library == nil {
		return nil
	}
	l := info.Library
	return &checker.Library{Name: l.Name, Version: l.Version(), Language: l.Language}
}

// storedLibrary is the library a stored run recorded in its results.json:
// a re-analysis keeps the version that ran, not the analysing program's.
func storedLibrary(dir string) *checker.Library {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return nil
	}
	var v struct {
		Library *checker.Library `json:"library"`
	}
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v.Library
}
