package clientprotocol

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/locktorture/locktorture/internal/secret"
)

// shownLine is the most of a client's line a finding or an error shows.
const shownLine = 200

// showLine is how a line a client wrote is shown in a finding or an error.
// Every secret is masked first, in the whole line, so that cutting it
// cannot leave part of one (a cut password is no longer the value
// secret.Redact knows): the harness's registered secrets, and the string
// value of any JSON member named like a credential ("password", "auth"),
// however it was escaped. Then it is quoted printably: a control byte (ESC,
// CR, TAB), a byte that is not UTF-8, a character that does not print (a
// bidi override) and a backslash are written as Go escapes (\x1b, \r, \xff,
// \u202e, \\), so nothing a client wrote reaches a terminal raw. Then it is
// cut to about max bytes, never inside an escape or a mask, with "...".
func showLine(b []byte, max int) string {
	s := maskCredentials(secret.Redact(string(b)))
	var out strings.Builder
	for i := 0; i < len(s); {
		var piece string
		n := 1
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case strings.HasPrefix(s[i:], secret.Mask):
			piece, n = secret.Mask, len(secret.Mask)
		case r == utf8.RuneError && size == 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		case r == '\\':
			piece = `\\`
		case unicode.IsPrint(r):
			piece, n = s[i:i+size], size
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\r', '\u202e'
			piece, n = q[1:len(q)-1], size
		}
		if out.Len()+len(piece) > max {
			out.WriteString("...")
			break
		}
		out.WriteString(piece)
		i += n
	}
	return out.String()
}

// credentialMember matches a JSON member whose name says it holds a
// credential (password, passwd, auth, secret, token, digest, in any case
// and within a longer name) and whose value is a string, however escaped:
// an adapter that echoes its open request writes the password
// JSON-escaped, which is not the value secret.Redact knows when the
// password holds a quote, a backslash, "<", ">" or "&".
var credentialMember = regexp.MustCompile(`(?i)("[a-z_\-]*(?:pass|pwd|auth|secret|token|digest)[a-z_\-]*"\s*:\s*)"(?:[^"\\]|\\.)*"`)

// maskCredentials masks the string value of every JSON member in s named
// like a credential (see credentialMember).
func maskCredentials(s string) string {
	if !strings.Contains(s, `"`) {
		return s
	}
	return credentialMember.ReplaceAllString(s, `$1"`+secret.Mask+`"`)
}

// tailWindow is how much of the end of a client's log stderrTail reads.
const tailWindow = 8192

// stderrTail is the last n lines of the client log at path, each shown as
// showLine shows a line ("" when there are none), joined by " | ". A line
// the window starts inside of is left out: it may begin inside a secret,
// whose end alone no mask would match.
func stderrTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	cut := false
	if st, err := f.Stat(); err == nil && st.Size() > tailWindow {
		_, _ = f.Seek(st.Size()-tailWindow, io.SeekStart)
		cut = true
	}
	b, _ := io.ReadAll(io.LimitReader(f, tailWindow))
	lines := strings.Split(string(b), "\n")
	if cut {
		lines = lines[1:]
	}
	var shown []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			shown = append(shown, l)
		}
	}
	shown = shown[max(0, len(shown)-n):]
	for i, l := range shown {
		shown[i] = showLine([]byte(l), shownLine)
	}
	return strings.Join(shown, " | ")
}
