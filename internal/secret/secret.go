// Package secret keeps secrets (passwords, keys) out of everything the
// harness writes down: every secret the process learns — a password a
// servers file names by reference, the per-run password of the servers a
// run starts — is registered here, and whatever goes to the store, a log,
// an error line or the report passes through Redact (or a Writer), which
// puts "[redacted]" where a registered value stood.
package secret

import (
	"io"
	"sort"
	"strings"
	"sync"
)

// Mask is what stands where a secret was.
const Mask = "[redacted]"

// minLen is the shortest value registered: a shorter "secret" would mask
// ordinary words (and is no secret).
const minLen = 4

var (
	mu     sync.RWMutex
	values = map[string]bool{}
	sorted []string // longest first, so a secret holding another is masked whole
)

// Register makes v a secret for the rest of the process: Redact masks it.
// Values shorter than four bytes are ignored.
func Register(v string) {
	if len(v) < minLen {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if values[v] {
		return
	}
	values[v] = true
	sorted = append(sorted, v)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
}

// Redact returns s with every registered secret masked.
func Redact(s string) string {
	mu.RLock()
	defer mu.RUnlock()
	for _, v := range sorted {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	return s
}

// Any reports whether a secret is registered.
func Any() bool {
	mu.RLock()
	defer mu.RUnlock()
	return len(sorted) > 0
}

// Writer returns a writer that masks secrets in what is written to w. It
// masks within each Write (a log line, a JSON line), which is how every
// writer of the harness writes.
func Writer(w io.Writer) io.Writer { return redactor{w} }

type redactor struct{ w io.Writer }

func (r redactor) Write(p []byte) (int, error) {
	if !Any() {
		return r.w.Write(p)
	}
	if _, err := io.WriteString(r.w, Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap is the writer masked writes go to (a terminal check looks there).
func (r redactor) Unwrap() io.Writer { return r.w }
