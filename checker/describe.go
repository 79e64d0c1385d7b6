package checker

import (
	"fmt"
	"strings"
	"time"
)

// secs formats a history time (ns since the run started) as seconds with
// two decimals, as in "2.61s".
func secs(ns int64) string {
	return fmt.Sprintf("%.2fs", float64(ns)/1e9)
}

// length formats a duration in ns: seconds with two decimals from 10ms up
// ("1.31s"), a rounded Go duration below that ("240µs"), so that a short
// overlap does not read "0.00s".
func length(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= 10*time.Millisecond:
		return secs(ns)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond).String()
	}
	return d.String()
}

// leaseString formats a lease in milliseconds compactly: "1s", "2.5s", "800ms".
func leaseString(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// fenceSuffix returns " (fence N)", or "" without a fence.
func fenceSuffix(f *int64) string {
	if f == nil {
		return ""
	}
	return fmt.Sprintf(" (fence %d)", *f)
}

// grantSuffix says where a hold was granted and its fence: " (on A,B,C)",
// " (fence 34)", " (on A,B,C, fence 34)", or nothing.
func grantSuffix(h *Hold) string {
	switch {
	case len(h.Nodes) > 0 && h.Fence != nil:
		return fmt.Sprintf(" (on %s, fence %d)", strings.Join(h.Nodes, ","), *h.Fence)
	case len(h.Nodes) > 0:
		return " (on " + strings.Join(h.Nodes, ",") + ")"
	}
	return fenceSuffix(h.Fence)
}

// maxListed caps every list of violations in a result: the first ones are
// listed in full, enough for the report and the summary, and Count always
// has the total, so an hour-long run with millions of violations keeps
// bounded evidence. Results.Capped names the lists it cut short.
const maxListed = 1000
