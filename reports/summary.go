package reports

import (
	"fmt"
	"strings"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/words"
)

// plural returns "1 overlap" or "3 overlaps".

func fenceStr(f *int64) string {
	if f == nil {
		return "no fence"
	}
	return fmt.Sprintf("fence %d", *f)
}

// overlapText says an overlap in plain words: its Description, or one made
// from its fields.
func overlapText(o checker.Overlap) string {
	if o.Description != "" {
		return o.Description
	}
	kind := strings.ReplaceAll(o.Kind, "-", " ")
	if kind == "" {
		kind = "overlap"
	}
	return fmt.Sprintf("key %s: %s: %s (%s) and %s (%s) both held it for %s from %.3fs",
		o.Key, kind, procLabel(o.Earlier.Process), fenceStr(o.Earlier.Fence),
		procLabel(o.Later.Process), fenceStr(o.Later.Fence), fmtDur(o.Length), sec(o.Start))
}

func staleText(s checker.StaleWrite) string {
	if s.Description != "" {
		return s.Description
	}
	return fmt.Sprintf("key %s: %s's write with fence %d was accepted at %.3fs after fence %d had been",
		s.Key, procLabel(s.Process), s.Fence, sec(s.Time), s.Highest)
}

func rejectionText(r checker.Rejection) string {
	if r.Description != "" {
		return r.Description
	}
	s := fmt.Sprintf("key %s: %s's %s with %s was refused at %.3fs", r.Key, procLabel(r.Process), r.F, fenceStr(r.Fence), sec(r.Time))
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

func lostText(l checker.LostUpdateViolation) string {
	if l.Description != "" {
		return l.Description
	}
	if l.Kind == "final-read" {
		return fmt.Sprintf("key %s: final read %d, but %d writes were accepted", l.Key, l.Value, l.Accepted)
	}
	return fmt.Sprintf("key %s: value %d was written by more than one accepted write (processes %v)", l.Key, l.Value, l.Processes)
}

// checkerLine is one row of the summary's checker table.
type checkerLine struct {
	name    string
	verdict checker.Validity
	detail  string
	err     string
}

// checkerLines describes, in report order, every checker that ran.
func checkerLines(c *checker.Checkers) []checkerLine {
	var out []checkerLine
	if m := c.Mutex; m != nil {
		d := fmt.Sprintf("%s in %s (%s, %s)", words.Count(m.Count, "overlap", "overlaps"), words.Count(m.Holds, "hold", "holds"),
			words.Count(m.StaleHolders, "stale holder", "stale holders"), words.Count(m.DoubleGrants, "double grant", "double grants"))
		if m.Count == 0 {
			d = fmt.Sprintf("no overlap in %s", words.Count(m.Holds, "hold", "holds"))
		}
		if m.RolledBack > 0 {
			d += fmt.Sprintf("; %s rolled back with its transaction (void: nothing done through it took effect)", words.Count(m.RolledBack, "hold", "holds"))
		}
		out = append(out, checkerLine{checker.NameMutex, m.Valid, d, m.Error})
	}
	if l := c.Linearizable; l != nil {
		var d string
		switch {
		case len(l.BadKeys) > 0:
			d = fmt.Sprintf("%d of %s not linearizable (%s); %s checked", len(l.BadKeys), words.Count(l.Keys, "key", "keys"), keyList(l.BadKeys), words.Count(l.Ops, "lock op", "lock ops"))
		case len(l.UnknownKeys) > 0:
			d = fmt.Sprintf("undecided on %d of %s (%s) within %s", len(l.UnknownKeys), words.Count(l.Keys, "key", "keys"), keyList(l.UnknownKeys), fmtDur(l.TimeoutMS*1e6))
			if len(l.Undecided) > 0 {
				u := l.Undecided[0]
				d += fmt.Sprintf(": %s from %s to %s (%s): %s", u.Key, fmtDur(u.From), fmtDur(u.To), words.Count(u.Ops, "op", "ops"), u.Limit)
				if len(l.Undecided) > 1 {
					d += fmt.Sprintf(", and %d more", len(l.Undecided)-1)
				}
			}
		default:
			d = fmt.Sprintf("%s, %s linearizable", words.Count(l.Keys, "key", "keys"), words.Count(l.Ops, "lock op", "lock ops"))
		}
		out = append(out, checkerLine{checker.NameLinearizable, l.Valid, d, l.Error})
	}
	if f := c.Fencing; f != nil {
		d := words.Count(f.FencedWrites, "fenced write", "fenced writes")
		if f.UnfencedWrites > 0 {
			d += fmt.Sprintf(" (%d unfenced)", f.UnfencedWrites)
		}
		d += fmt.Sprintf(", %s accepted, %s rejected", words.Count(f.Count, "stale write", "stale writes"), words.Count(f.RejectedStale, "stale write", "stale writes"))
		out = append(out, checkerLine{checker.NameFencing, f.Valid, d, f.Error})
	}
	if l := c.LostUpdate; l != nil {
		d := fmt.Sprintf("%s in %s on %s (%s)", words.Count(l.Count, "lost update", "lost updates"), words.Count(l.AcceptedWrites, "accepted write", "accepted writes"),
			words.Count(l.Keys, "key", "keys"), words.Count(l.FinalReads, "final read", "final reads"))
		if l.Note != "" {
			d += "; " + l.Note
		}
		out = append(out, checkerLine{checker.NameLostUpdate, l.Valid, d, l.Error})
	}
	if s := c.Stats; s != nil {
		d := fmt.Sprintf("%s, %.1f holds/s, %.0f ops/s, acquire p50 %s p99 %s, %s over %s",
			words.Count(s.Holds, "hold", "holds"), s.HoldsPerSecond, s.OpsPerSecond,
			fmtDur(s.AcquireLatency.P50), fmtDur(s.AcquireLatency.P99), words.Count(s.Clients, "client", "clients"), fmtDur(s.Span))
		d += lowAvailability(s.Availability)
		out = append(out, checkerLine{checker.NameStats, s.Valid, d, s.Error})
	}
	return out
}

// lowAvailability says, when a key went without a holder for at least
// half the run, which key and for how long: availability that collapsed
// (a server gone, every acquire failing, a lock leaked) shows at once
// beside a verdict that cannot see it. It is an alarm only when clients
// asked for the key and were refused (busy, no answer) for at least a
// fifth of the run; a key idle because the clients are slow to come back
// for it (an interpreter, round trips, think time) is said to be the
// clients' pace. "" otherwise.
func lowAvailability(as []checker.KeyAvailability) string {
	worst := -1
	for i, a := range as {
		if worst < 0 || a.Fraction > as[worst].Fraction {
			worst = i
		}
	}
	if worst < 0 || as[worst].Fraction < 0.5 {
		return ""
	}
	a := as[worst]
	of := ""
	if len(as) > 1 {
		of = fmt.Sprintf(", the worst of %d keys", len(as))
	}
	if a.RefusedFraction < 0.2 {
		return fmt.Sprintf("; %s had no holder %.0f%% of the run (%s%s): the clients' own pace between a release and their next acquire, not refusals (refused %.0f%%)",
			a.Key, 100*a.Fraction, words.Count(a.Holds, "hold", "holds"), of, 100*a.RefusedFraction)
	}
	return fmt.Sprintf("; low availability: %s had no holder %.0f%% of the run (%s%s), %.0f%% while clients asked for it and were refused or got no answer",
		a.Key, 100*a.Fraction, words.Count(a.Holds, "hold", "holds"), of, 100*a.RefusedFraction)
}

func keyList(ks []string) string {
	if len(ks) <= 5 {
		return strings.Join(ks, ", ")
	}
	return strings.Join(ks[:5], ", ") + fmt.Sprintf(", … %d more", len(ks)-5)
}

// violationGroup is one checker's violations in plain words.
type violationGroup struct {
	checker string
	title   string   // what they are, for headings
	texts   []string // every one reported (the checker's list is capped)
	total   int      // how many the checker counted
}

// violationGroups lists the violations of every checker that ran, in plain
// words: mutex overlaps, accepted stale writes, fencing rejections (prefixed
// "rejected: "), lost updates.
func violationGroups(c *checker.Checkers) []violationGroup {
	var out []violationGroup
	if m := c.Mutex; m != nil && len(m.Violations) > 0 {
		g := violationGroup{checker: checker.NameMutex, title: "mutex: overlapping holds", total: max(m.Count, len(m.Violations))}
		for _, o := range m.Violations {
			g.texts = append(g.texts, overlapText(o))
		}
		out = append(out, g)
	}
	if f := c.Fencing; f != nil && len(f.Violations) > 0 {
		g := violationGroup{checker: checker.NameFencing, title: "fencing: stale writes accepted", total: max(f.Count, len(f.Violations))}
		for _, s := range f.Violations {
			g.texts = append(g.texts, staleText(s))
		}
		out = append(out, g)
	}
	if f := c.Fencing; f != nil && len(f.Rejections) > 0 {
		g := violationGroup{checker: checker.NameFencing, title: "fencing: stale reads/writes rejected (the fence did its job)", total: max(f.RejectedStale, len(f.Rejections))}
		for _, r := range f.Rejections {
			g.texts = append(g.texts, "rejected: "+rejectionText(r))
		}
		out = append(out, g)
	}
	if l := c.LostUpdate; l != nil && len(l.Violations) > 0 {
		g := violationGroup{checker: checker.NameLostUpdate, title: "lost-update: lost updates", total: max(l.Count, len(l.Violations))}
		for _, v := range l.Violations {
			g.texts = append(g.texts, lostText(v))
		}
		out = append(out, g)
	}
	return out
}

// headline is the first line of a summary: the verdict and what ran.
// Headline is the first line of a run's summary: "INVALID —
// kleppmann-pause / redis-token (seed 1, 412 ops)".
func Headline(res *checker.Results) string {
	s := strings.ToUpper(res.Valid.String())
	var what []string
	if res.Scenario != "" {
		what = append(what, res.Scenario)
	}
	if res.Backend != "" {
		b := res.Backend
		if res.Program != "" {
			b += ": " + res.Program // the lock that ran is the user's program
		}
		what = append(what, b)
	}
	if len(what) > 0 {
		s += " — " + strings.Join(what, " / ")
	}
	return s + fmt.Sprintf(" (seed %d, %s)", res.Seed, words.Count(res.Ops, "op", "ops"))
}

// Summary returns the one-screen plain-text account of a run that the CLI
// prints when it ends: the verdict on the first line ("INVALID —
// kleppmann-pause / redis-token (seed 1, 412 ops)"), one line per checker
// that ran with its verdict and key numbers, then the first violations of
// each checker in plain words (at most maxViolations each; a negative
// maxViolations lists every one the results hold, zero none), and the
// results' note and truncation if set. It never names the store path.
func Summary(res *checker.Results, maxViolations int) string {
	if res == nil {
		return "UNKNOWN — no results\n"
	}
	var b strings.Builder
	b.WriteString(Headline(res))
	b.WriteByte('\n')
	lines := checkerLines(&res.Checkers)
	if len(lines) == 0 {
		b.WriteString("  no checker ran\n")
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "  %-13s %-8s %s", l.name, l.verdict, l.detail)
		if l.err != "" {
			fmt.Fprintf(&b, " — error: %s", l.err)
		}
		b.WriteByte('\n')
	}
	if res.Truncated {
		b.WriteString("  note: the history's last line was cut off and dropped\n")
	}
	if res.Note != "" {
		fmt.Fprintf(&b, "  note: %s\n", res.Note)
	}
	if maxViolations == 0 {
		return b.String()
	}
	if ws := staleWindows(res.Checkers.Mutex); len(ws) > 0 {
		b.WriteString("in short:\n")
		for i, w := range ws {
			if maxViolations > 0 && i >= maxViolations {
				fmt.Fprintf(&b, "  … and %d more stale holders\n", len(ws)-i)
				break
			}
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	groups := violationGroups(&res.Checkers)
	if len(groups) > 0 {
		b.WriteString("violations:\n")
	}
	for _, g := range groups {
		n := len(g.texts)
		if maxViolations > 0 {
			n = min(n, maxViolations)
		}
		for _, t := range g.texts[:n] {
			fmt.Fprintf(&b, "  %s: %s\n", g.checker, t)
		}
		if more := g.total - n; more > 0 {
			fmt.Fprintf(&b, "  %s: … and %d more (see results.json)\n", g.checker, more)
		}
	}
	return b.String()
}

// staleWindows sums up the stale-holder overlaps per stale hold: how long
// the holder went on after its lease ran out, and who took the lock
// meanwhile — Kleppmann's picture in one line.
func staleWindows(m *checker.MutexResult) []string {
	if m == nil {
		return nil
	}
	type holdID struct {
		p     int
		key   string
		start int64
	}
	type window struct {
		h      checker.Hold
		takers map[int]int
		order  []int
	}
	var ids []holdID
	wins := map[holdID]*window{}
	for _, v := range m.Violations {
		e := v.Earlier
		if v.Kind != checker.StaleHolder || e.LeaseEnd == nil || *e.LeaseEnd > v.Start {
			continue
		}
		id := holdID{e.Process, e.Key, e.Start}
		w, ok := wins[id]
		if !ok {
			w = &window{h: e, takers: map[int]int{}}
			wins[id] = w
			ids = append(ids, id)
		}
		if w.takers[v.Later.Process] == 0 {
			w.order = append(w.order, v.Later.Process)
		}
		w.takers[v.Later.Process]++
	}
	var out []string
	for _, id := range ids {
		w := wins[id]
		end := fmt.Sprintf("%.2fs", float64(w.h.End)/1e9)
		if w.h.Open {
			end = "the end of the history"
		}
		var who []string
		for _, p := range w.order {
			n := w.takers[p]
			times := "once"
			if n > 1 {
				times = fmt.Sprintf("%d times", n)
			}
			who = append(who, fmt.Sprintf("process %d acquired it %s", p, times))
		}
		out = append(out, fmt.Sprintf("process %d went on holding %s for %.2fs after its lease ran out (%.2fs to %s); meanwhile %s",
			w.h.Process, w.h.Key, float64(w.h.End-*w.h.LeaseEnd)/1e9, float64(*w.h.LeaseEnd)/1e9, end, strings.Join(who, ", ")))
	}
	return out
}
