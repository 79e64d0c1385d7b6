// Package secret keeps secrets (passwords, keys) out of everything the
// harness writes down: every secret the process learns — a password a
// servers file names by reference, the per-run password of the servers a
// run starts — is registered here, and whatever goes to the store, a log,
// an error line or the report passes through Redact (or a Writer), which
// puts "[redacted]" where a registered value stood.
//
// A secret that could pass for an ordinary word (a weak one: short, or letters
// only, or digits only — "latency", "run", "2024") is masked only where it
// stands as a secret: as a whole token after a credential word on its line
// (AUTH, password, requirepass, masterauth, user, digest, IDENTIFIED BY, a
// DSN's "://"). So the same word elsewhere ("latency p50") survives, while
// the secret is never written down as one. Any other secret is masked
// wherever it appears.
package secret

import (
	"io"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// Mask is what stands where a secret was.
const Mask = "[redacted]"

var (
	mu     sync.RWMutex
	values = map[string]bool{}
	strong []string // masked everywhere; longest first, so a secret holding another is masked whole
	weak   []string // masked where they stand as secrets; longest first
)

// Register makes v a secret for the rest of the process: Redact masks it
// (a weak one only where it stands as a secret). The empty string is no
// secret.
func Register(v string) {
	if v == "" {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if values[v] {
		return
	}
	values[v] = true
	l := &strong
	if isWeak(v) {
		l = &weak
	}
	*l = append(*l, v)
	sort.Slice(*l, func(i, j int) bool { return len((*l)[i]) > len((*l)[j]) })
}

// isWeak reports whether v could pass for an ordinary word of the output,
// so masking it everywhere would mask that word: under six bytes, or
// letters only, or digits only, and under sixteen bytes.
func isWeak(v string) bool {
	if len(v) < 6 {
		return true
	}
	if len(v) >= 16 {
		return false
	}
	notLetter := func(r rune) bool { return !unicode.IsLetter(r) }
	notDigit := func(r rune) bool { return r < '0' || r > '9' }
	return strings.IndexFunc(v, notLetter) < 0 || strings.IndexFunc(v, notDigit) < 0
}

// Redact returns s with every registered secret masked.
func Redact(s string) string {
	mu.RLock()
	defer mu.RUnlock()
	for _, v := range strong {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	if len(weak) == 0 {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		lines[i] = redactWeak(l)
	}
	return strings.Join(lines, "")
}

// markers are the words (lower case) after which, on one line, a weak
// secret stands as a secret.
var markers = []string{"pass", "pwd", "auth", "secret", "credential", "user", "login", "digest", "identified by", "://"}

// redactWeak masks the weak secrets that stand as whole tokens after the
// line's first credential marker.
func redactWeak(line string) string {
	from := -1
	low := asciiLower(line)
	for _, m := range markers {
		if i := strings.Index(low, m); i >= 0 && (from < 0 || i+len(m) < from) {
			from = i + len(m)
		}
	}
	if from < 0 {
		return line
	}
	tail := line[from:]
	for _, v := range weak {
		tail = replaceTokens(tail, v)
	}
	return line[:from] + tail
}

// replaceTokens masks each occurrence of v in s that is a whole token:
// not joined to a letter, digit or '_' on either side.
func replaceTokens(s, v string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, v)
		if i < 0 {
			break
		}
		end := i + len(v)
		if (i > 0 && isWord(s[i-1])) || (end < len(s) && isWord(s[end])) {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(Mask)
		s = s[end:]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s)
	return b.String()
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// isWord: a byte a token goes on through (any byte of a non-ASCII
// character counts, as a letter of another script would).
func isWord(c byte) bool { return isLetter(c) || (c >= '0' && c <= '9') || c == '_' || c >= 0x80 }

// asciiLower lowers ASCII letters only, so that indexes stay those of s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Any reports whether a secret is registered.
func Any() bool {
	mu.RLock()
	defer mu.RUnlock()
	return len(strong)+len(weak) > 0
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
