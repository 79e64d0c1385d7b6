// Package shell quotes command lines for a POSIX shell, so that a command
// the harness prints (the repeat line, a matrix cell's command) can be
// pasted back as it is.
package shell

import "strings"

// safe reports whether s needs no quoting: it is not empty and holds only
// characters no shell gives a meaning to.
func safe(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("@%+=:,./_-", r):
		default:
			return false
		}
	}
	return true
}

// quote returns s as one shell word: itself when it is plain, else in
// single quotes, each single quote inside written as the four characters
// quote, backslash, quote, quote.
func quote(s string) string {
	if safe(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join quotes each word and joins them with spaces.
func Join(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = quote(w)
	}
	return strings.Join(out, " ")
}
