package libversion

import (
	"context"
	"fmt"
	"strings"
)

// Row is what one version came to: built or not, and its runs.
type Row struct {
	Version string `json:"version"`
	// Built is false when the program did not build at the version
	// (BuildError says why).
	Built      bool   `json:"built"`
	BuildError string `json:"build_error,omitempty"`
	// Runs is how many runs were made; Reproduced how many reproduced the
	// finding, Undecided how many could not decide (or failed: Errors).
	Runs       int      `json:"runs"`
	Reproduced int      `json:"reproduced"`
	Undecided  int      `json:"undecided,omitempty"`
	Errors     []string `json:"errors,omitempty"`
	// Seeds are the seeds run, in order.
	Seeds []int64 `json:"seeds,omitempty"`
}

// Verdict is a row's answer for the search.
type Verdict int

// A version reproduces (some run did), does not (every run decided, none
// reproduced), or gives no answer (did not build, or no run reproduced
// and some could not decide): the search skips it.
const (
	Skip Verdict = iota
	Yes
	No
)

// Verdict is the row's answer for the search.
func (r Row) Verdict() Verdict {
	switch {
	case !r.Built || r.Runs == 0:
		return Skip
	case r.Reproduced > 0:
		return Yes
	case r.Undecided > 0:
		return Skip
	}
	return No
}

// Cell is the row's cell of the table: "reproduced n/N", "did not
// build", with the undecided runs when there were any.
func (r Row) Cell() string {
	if !r.Built {
		return "did not build"
	}
	s := fmt.Sprintf("reproduced %d/%d", r.Reproduced, r.Runs)
	if r.Undecided > 0 {
		s += fmt.Sprintf(" (%d undecided)", r.Undecided)
	}
	return s
}

// Probe builds and runs one version.
type Probe func(ctx context.Context, version string) (Row, error)

// Result is a bisection: the rows it ran (oldest first) and what they say.
type Result struct {
	// Versions are the versions searched, oldest first.
	Versions []string `json:"versions"`
	// Rows are the versions probed, oldest first.
	Rows []Row `json:"rows"`
	// First is the first version that reproduces ("" when none does).
	First string `json:"first,omitempty"`
	// LastClean is the newest version below First that built and did not
	// reproduce ("" when none did: it began at or before First).
	LastClean string `json:"last_clean,omitempty"`
	// Skipped are the versions between LastClean and First that gave no
	// answer (did not build, or undecided): First is only the first that
	// answered.
	Skipped []string `json:"skipped,omitempty"`
	// Summary says it in one sentence.
	Summary string `json:"summary"`
}

// Bisect finds the first of versions (oldest first) at which probe
// reproduces, by binary search, assuming that once it reproduces it goes
// on reproducing. It checks both ends first: the newest (TO: it must
// reproduce there, or there is nothing to search for) and the oldest that
// gives an answer (FROM: when it reproduces there too, the finding began
// at or before FROM). A version that does not build or cannot decide is
// skipped, and the search goes on beside it. err is the probe's (the
// harness's, not a version's).
func Bisect(ctx context.Context, versions []string, probe Probe) (*Result, error) {
	res := &Result{Versions: versions}
	if len(versions) == 0 {
		res.Summary = "no versions to search"
		return res, nil
	}
	rows := map[int]Row{}
	run := func(i int) (Verdict, error) {
		if r, ok := rows[i]; ok {
			return r.Verdict(), nil
		}
		r, err := probe(ctx, versions[i])
		if err != nil {
			return Skip, err
		}
		r.Version = versions[i]
		rows[i] = r
		return r.Verdict(), nil
	}
	finish := func(summary string) (*Result, error) {
		for i := range versions {
			if r, ok := rows[i]; ok {
				res.Rows = append(res.Rows, r)
			}
		}
		res.Summary = summary
		return res, nil
	}
	n := len(versions)
	to := versions[n-1]
	switch v, err := run(n - 1); {
	case err != nil:
		return nil, err
	case v == No:
		return finish(fmt.Sprintf("does not reproduce at %s, the newest version tried: nothing to search for", to))
	case v == Skip:
		return finish(fmt.Sprintf("no answer at %s, the newest version tried (%s): cannot search below it", to, rows[n-1].Cell()))
	}
	// lo is the newest version known not to reproduce below hi (-1: none
	// yet); floor, while lo is -1, the newest that did not build: older
	// ones are taken not to build either (the program uses an API the
	// library added at some version), so the search goes on above it.
	hi, lo, floor := n-1, -1, -1
	for {
		low := max(lo, floor)
		if hi-low <= 1 {
			break
		}
		pick := -1
		if len(rows) == 1 {
			pick = 0 // FROM, the other end, first
		} else {
			mid := (low + hi) / 2
			for d := 0; d < hi-low && pick < 0; d++ {
				for _, i := range []int{mid - d, mid + d + 1} {
					if pick < 0 && i > low && i < hi {
						if _, tried := rows[i]; !tried {
							pick = i
						}
					}
				}
			}
		}
		if pick < 0 {
			break // everything between gave no answer
		}
		v, err := run(pick)
		if err != nil {
			return nil, err
		}
		switch {
		case v == Yes:
			hi = pick
		case v == No:
			lo = pick
		case lo < 0 && !rows[pick].Built:
			floor = pick
		}
	}
	res.First = versions[hi]
	if n == 1 {
		return finish(fmt.Sprintf("reproduces at %s, the only version tried", to))
	}
	if lo < 0 {
		first := versions[0]
		if hi == 0 {
			return finish(fmt.Sprintf("reproduces at the oldest version tried, %s: it began at or before %s", first, first))
		}
		var noBuild, noAnswer []string
		for i := 0; i < hi; i++ {
			if r, ok := rows[i]; ok && !r.Built {
				noBuild = append(noBuild, versions[i])
			} else if ok {
				noAnswer = append(noAnswer, versions[i])
			}
		}
		why := ""
		if len(noBuild) > 0 {
			why = "the program did not build at " + strings.Join(noBuild, ", ")
			if u := floor - countTried(rows, 0, floor); floor > 0 && u > 0 {
				why += fmt.Sprintf(", and is taken not to build at the %d older versions not tried", u)
			}
		}
		if len(noAnswer) > 0 {
			if why != "" {
				why += "; "
			}
			why += strings.Join(noAnswer, ", ") + " could not decide"
		}
		return finish(fmt.Sprintf("reproduces at %s, the oldest version tried that answered (%s): it began at or before %s", res.First, why, res.First))
	}
	res.LastClean = versions[lo]
	res.Skipped = append([]string(nil), versions[lo+1:hi]...)
	if len(res.Skipped) > 0 {
		return finish(fmt.Sprintf("began after %s, at or before %s (%s gave no answer)", res.LastClean, res.First, strings.Join(res.Skipped, ", ")))
	}
	return finish(fmt.Sprintf("first version that reproduces: %s (%s does not)", res.First, res.LastClean))
}

// countTried counts the versions in [from, to) that were probed.
func countTried(rows map[int]Row, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if _, ok := rows[i]; ok {
			n++
		}
	}
	return n
}

// Table is the bisection's table: version -> reproduced n/N (or "did not
// build"), one version a line, oldest first, the first version marked.
func (r *Result) Table() string {
	var s strings.Builder
	w := len("version")
	for _, row := range r.Rows {
		w = max(w, len(row.Version))
	}
	fmt.Fprintf(&s, "%-*s  %s\n", w, "version", "result")
	for _, row := range r.Rows {
		mark := ""
		if row.Version == r.First {
			mark = "   <- first"
		}
		fmt.Fprintf(&s, "%-*s  %s%s\n", w, row.Version, row.Cell(), mark)
	}
	return s.String()
}
