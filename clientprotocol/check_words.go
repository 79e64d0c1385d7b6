// client-check's English: replies and counts in plain words, for its
// findings.

package clientprotocol

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// describe writes a reply in plain words.
func describe(r reply) string {
	if !r.ok && r.why != "" {
		return "no reply (" + r.why + ")"
	}
	if !r.ok {
		return "no reply"
	}
	return answer(r) + " after " + r.after.Round(time.Millisecond).String()
}

// loginHint is, for a reply whose error says the client did not log in,
// " — " and where to look (see LoginHint); "" otherwise.
func loginHint(r reply) string {
	if h := LoginHint(r.m.Error); r.ok && h != "" {
		return " — " + h
	}
	return ""
}

// answer writes a reply's type and error, without its time.
func answer(r reply) string {
	s := r.m.Type
	if r.m.Error != "" {
		s += fmt.Sprintf(" (%q)", r.m.Error)
	}
	return s
}

// describeAll writes replies in plain words, those of the same answer
// together: `info ("i/o timeout") after 181ms and 182ms`.
func describeAll(rs []reply) string {
	var order []string
	times := map[string][]string{}
	for _, r := range rs {
		a := answer(r)
		if _, ok := times[a]; !ok {
			order = append(order, a)
		}
		times[a] = append(times[a], r.after.Round(time.Millisecond).String())
	}
	var out []string
	for _, a := range order {
		out = append(out, a+" after "+joinAnd(times[a]))
	}
	return joinAnd(out)
}

// acquires is "an acquire" or "N acquires".
func acquires(n int) string {
	if n == 1 {
		return "an acquire"
	}
	return strconv.Itoa(n) + " acquires"
}

// times is "" for once, " both times" or " all N times" for more.
func times(n int) string {
	switch {
	case n <= 1:
		return ""
	case n == 2:
		return " both times"
	}
	return fmt.Sprintf(" all %d times", n)
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
