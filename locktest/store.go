package locktest

import (
	"os"
	"path/filepath"
	"sync"
)

// The store: every run writes its report under a store root; a passing
// subtest's run is removed at once (unless LOCKTEST_KEEP), a failing one's
// is kept. The root is $LOCKTEST_STORE, else a temporary directory that
// Main removes when no run was kept in it.

var (
	storeMu   sync.Mutex
	tempStore string
	kept      bool
)

// storeRoot is the store's root directory.
func storeRoot() (string, error) {
	if s := os.Getenv(EnvStore); s != "" {
		return s, os.MkdirAll(s, 0o755)
	}
	storeMu.Lock()
	defer storeMu.Unlock()
	if tempStore == "" {
		d, err := os.MkdirTemp("", "locktest-store-")
		if err != nil {
			return "", err
		}
		tempStore = d
	}
	return tempStore, nil
}

// keepStore marks the temporary store as holding a kept run's report.
func keepStore() {
	storeMu.Lock()
	defer storeMu.Unlock()
	kept = true
}

// removeTempStore removes the temporary store unless it keeps a report.
func removeTempStore() {
	storeMu.Lock()
	defer storeMu.Unlock()
	if tempStore != "" && !kept {
		_ = os.RemoveAll(tempStore)
	}
}

// removeRun removes a passing run's directory, the scenario's and
// backend's directories when they are left empty, and store/latest when it
// pointed at the run.
func removeRun(store, dir string) {
	_ = os.RemoveAll(dir)
	for d := filepath.Dir(dir); d != store && len(d) > len(store); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	latest := filepath.Join(store, "latest")
	if target, err := os.Readlink(latest); err == nil {
		if _, err := os.Stat(filepath.Join(store, target)); os.IsNotExist(err) {
			_ = os.Remove(latest)
		}
	}
}
