package secret

import (
	"net/url"
	"sort"
	"strings"
)

// A server's address, as a servers file or a user writes it, may carry a
// password in one of several forms. DSNPasswords finds it and RedactDSN
// masks it there, whether or not the address is one the harness accepts
// (a refused value is quoted in the error that refuses it):
//
//	postgres://user:PW@host:5432/db        a URL's user info (any scheme)
//	postgres://user@host/db?password=PW    a URL query's password (sslpassword, pwd, ...)
//	host=db user=u password=PW             libpq's key=value form (password='P W' quoted)
//	user:PW@tcp(host:3306)/db              the MySQL driver's form
//	user:PW@host:6379                      user info before host:port
//	PW@host:6379                           (a password alone, as Redis's requirepass)
//
// A URL whose user info holds an unescaped '/', '?' or '#' (which Go's
// URL parser does not take) is read up to its last '@' as well.

// span is a password's place in a string: s[from:to].
type span struct{ from, to int }

// DSNPasswords returns the passwords s carries (see RedactDSN's forms),
// each as written and, when it differs, unescaped (a URL's %40, a quoted
// key=value's \'), so that both are registered. None: nil.
func DSNPasswords(s string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, sp := range passwordSpans(s) {
		v := s[sp.from:sp.to]
		add(v)
		if u, err := url.PathUnescape(v); err == nil {
			add(u)
		}
		if u, err := url.QueryUnescape(v); err == nil {
			add(u)
		}
		add(strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(v))
	}
	return out
}

// RedactDSN returns s with each password it carries (in any of the forms
// above) replaced by mask; the rest of s (user, host, database) is left as
// written.
func RedactDSN(s, mask string) string {
	spans := passwordSpans(s)
	for i := len(spans) - 1; i >= 0; i-- {
		sp := spans[i]
		s = s[:sp.from] + mask + s[sp.to:]
	}
	return s
}

// passwordSpans are the places of the passwords s carries, in order,
// not overlapping, none empty.
func passwordSpans(s string) []span {
	var out []span
	query := 0 // where a URL's or MySQL DSN's query may start
	switch scheme := strings.Index(s, "://"); {
	case scheme >= 0:
		start := scheme + len("://")
		if sp, ok := urlUserinfo(s, start); ok {
			out = append(out, sp)
			query = sp.to
		} else {
			query = start
		}
	case keyValueForm(s):
		return nonEmpty(keyValueSpans(s))
	default:
		// user:PW@tcp(host)/db, user:PW@host:port: the user info ends
		// at the last '@' (a password may hold one; a host does not).
		// Before host:port, user info without a ':' may be a password
		// alone (Redis's requirepass): all of it is taken.
		if at := strings.LastIndex(s, "@"); at >= 0 {
			if c := strings.IndexByte(s[:at], ':'); c >= 0 {
				out = append(out, span{c + 1, at})
			} else if !strings.Contains(s[at:], "(") {
				out = append(out, span{0, at})
			}
			query = at
		}
	}
	if q := strings.IndexByte(s[query:], '?'); q >= 0 {
		out = append(out, querySpans(s, query+q+1)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from < out[j].from })
	return nonEmpty(out)
}

// nonEmpty drops the empty spans (user: with no password) and any that
// overlap the one before.
func nonEmpty(spans []span) []span {
	var out []span
	for _, sp := range spans {
		if sp.to > sp.from && (len(out) == 0 || sp.from >= out[len(out)-1].to) {
			out = append(out, sp)
		}
	}
	return out
}

// urlUserinfo is the password of a URL's user info, the authority
// starting at start. The authority ends at the first '/', '?' or '#', and
// its user info at its last '@' (as Go's URL parser reads it); when the
// authority holds no '@' but the rest does before any '/' — or the URL is
// one Go's parser refuses, whose user info may hold a '/', '?' or '#' — the
// user info ends at the last '@'.
func urlUserinfo(s string, start int) (span, bool) {
	rest := s[start:]
	auth := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth = rest[:i]
	}
	end := strings.LastIndex(auth, "@")
	if end < 0 {
		at := strings.LastIndex(rest, "@")
		if at < 0 {
			return span{}, false
		}
		if _, err := url.Parse(s); err == nil && strings.Contains(rest[:at], "/") {
			return span{}, false // a '@' in the path or query: no user info
		}
		end = at
	}
	c := strings.IndexByte(rest[:end], ':')
	if c < 0 {
		return span{}, false // a user, no password
	}
	return span{start + c + 1, start + end}, true
}

// querySpans are the values of a query's password parameters, the query
// starting at from (parameters split at '&', the query ending at '#').
func querySpans(s string, from int) []span {
	var out []span
	end := len(s)
	if h := strings.IndexByte(s[from:], '#'); h >= 0 {
		end = from + h
	}
	for i := from; i < end; {
		j := strings.IndexByte(s[i:end], '&')
		if j < 0 {
			j = end - i
		}
		param := s[i : i+j]
		if k, _, ok := strings.Cut(param, "="); ok && passwordKey(k) {
			out = append(out, span{i + len(k) + 1, i + j})
		}
		i += j + 1
	}
	return out
}

// passwordKey reports whether a parameter named k holds a password
// (password, sslpassword, pass, passwd, pwd: any case, escaped or not).
func passwordKey(k string) bool {
	if u, err := url.QueryUnescape(k); err == nil {
		k = u
	}
	k = strings.ToLower(strings.TrimSpace(k))
	return strings.Contains(k, "password") || k == "pass" || k == "passwd" || k == "pwd"
}

// keyValueForm reports whether s is in libpq's key=value form: it starts
// with a key and '='.
func keyValueForm(s string) bool {
	s = strings.TrimLeft(s, " \t\r\n")
	i := 0
	for i < len(s) && (s[i] == '_' || isLetter(s[i]) || (s[i] >= '0' && s[i] <= '9')) {
		i++
	}
	return i > 0 && strings.HasPrefix(strings.TrimLeft(s[i:], " \t"), "=")
}

// keyValueSpans are the values of the password keys of a key=value
// string: a value is a run up to white space, or single-quoted (a
// backslash escapes the next byte); a quoted value's span leaves out its
// quotes.
func keyValueSpans(s string) []span {
	var out []span
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	i := 0
	for i < len(s) {
		for i < len(s) && space(s[i]) {
			i++
		}
		k := i
		for i < len(s) && s[i] != '=' && !space(s[i]) {
			i++
		}
		key := s[k:i]
		for i < len(s) && space(s[i]) {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			continue // not key=value: go on at the next word
		}
		i++
		for i < len(s) && space(s[i]) {
			i++
		}
		var v span
		if i < len(s) && s[i] == '\'' {
			i++
			v.from = i
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			v.to = min(i, len(s))
			i++
		} else {
			v.from = i
			for i < len(s) && !space(s[i]) {
				i++
			}
			v.to = i
		}
		if passwordKey(key) {
			out = append(out, v)
		}
	}
	return out
}
