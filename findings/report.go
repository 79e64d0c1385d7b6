package findings

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/words"
)

// reproducers holds each Go-library finding's standalone program
// (findings/reproducers/<id>/main.go): the library and a server, no
// locktorture.
//
//go:embed reproducers
var reproducers embed.FS

// Reproducer returns the finding's standalone Go program and its path in
// the repository, or "" when it has none.
func (f Finding) Reproducer() (src, file string) {
	p := path.Join("reproducers", f.ID, "main.go")
	b, err := fs.ReadFile(reproducers, p)
	if err != nil {
		return "", ""
	}
	return string(b), "findings/" + p
}

// ReportInput is what a run of the finding showed, for its issue text.
type ReportInput struct {
	// Results are the run's results.json; Ops its history (for when the
	// library's signal came), may be nil.
	Results *checker.Results
	Ops     []history.Op
	// Seed is the run's seed; Command the one command that repeats it.
	Seed    int64
	Command string
	// Version is the library's version in the run.
	Version string
	// FirstVersion is the first version where the finding reproduces
	// (locktorture bisect), "" when not bisected; Bisect says how it was
	// found (the table's command or file).
	FirstVersion, Bisect string
}

// Report is the finding's issue text, ready to file upstream (markdown):
// title; library, version and the first version where it began; the
// upstream words that decide its class, quoted with their link; what
// happened, in words and numbers; the one command that reproduces it; the
// servers and their versions; the known reports; what the set-up tuned;
// and, for a Go library, a standalone reproducer.
func (f Finding) Report(in ReportInput) string {
	var b strings.Builder
	ev := f.Evidence()
	lib := f.Library
	lang := ""
	if r := in.Results; r != nil && r.Library != nil {
		lib, lang = r.Library.Name, r.Library.Language
	}
	fmt.Fprintf(&b, "# %s %s: %s\n\n", f.Library, in.Version, f.Breaks)
	fmt.Fprintf(&b, "- Library: `%s` %s", lib, in.Version)
	if lang != "" {
		fmt.Fprintf(&b, " (%s)", lang)
	}
	b.WriteString("\n")
	switch {
	case in.FirstVersion != "":
		fmt.Fprintf(&b, "- First version where it reproduces: %s (%s)\n", in.FirstVersion, in.Bisect)
	case f.Module != "":
		fmt.Fprintf(&b, "- First version where it reproduces: not bisected (`locktorture bisect %s`)\n", f.ID)
	default:
		fmt.Fprintf(&b, "- Versions: the Debian package %s as installed; other versions are the Debian suites' (`locktorture matrix --versions`)\n", f.Package)
	}
	if ev.Class != "" {
		fmt.Fprintf(&b, "- Class: %s — %s\n", ev.Class, classMeaning(ev.Class))
	}
	b.WriteString("\n## What the documentation says\n\n")
	if ev.Words != "" {
		fmt.Fprintf(&b, "> %s\n\n— %s\n", ev.Words, ev.Source)
	} else {
		b.WriteString("(no words recorded)\n")
	}
	b.WriteString("\n## What happened\n\n")
	b.WriteString(whatHappened(f, in))
	b.WriteString("\n## Reproduce\n\n")
	fmt.Fprintf(&b, "With locktorture (it starts the servers itself, on 127.0.0.1):\n\n```\n%s\n```\n", in.Command)
	if sc, err := f.load(); err == nil && sc.Description != "" {
		fmt.Fprintf(&b, "\nThe scenario (`%s`): %s\n", sc.Name, strings.Join(strings.Fields(sc.Description), " "))
	}
	b.WriteString("\n## Servers\n\n")
	b.WriteString(serversText(in.Results))
	b.WriteString("\n## Known upstream reports\n\n")
	if len(ev.Reports) > 0 {
		for _, r := range ev.Reports {
			fmt.Fprintf(&b, "- %s\n", r)
		}
	} else if ev.Searched != "" {
		fmt.Fprintf(&b, "None found (searched: %s).\n", ev.Searched)
	} else {
		b.WriteString("None recorded.\n")
	}
	if ev.Tuned != "" {
		fmt.Fprintf(&b, "\n## Set-up\n\n%s\n", ev.Tuned)
	}
	if src, file := f.Reproducer(); src != "" {
		fmt.Fprintf(&b, "\n## Standalone reproducer\n\nOnly the library and a server (`%s`, %d lines):\n\n```go\n%s```\n", file, strings.Count(src, "\n"), src)
	}
	return b.String()
}

// classMeaning says what a class means, for a report's reader.
func classMeaning(c Class) string {
	switch c {
	case Defect:
		return "the library's own documentation promises otherwise"
	case Limitation:
		return "the library's or its server's documentation warns of it; this shows how it happens and how fast"
	case Gap:
		return "the API gives the holder no way to know, and the documentation says nothing of it"
	}
	return string(c)
}

// whatHappened says the run's outcome in words and numbers: the verdict,
// the counts of each kind of violation, the first violation and when the
// library's signal came.
func whatHappened(f Finding, in ReportInput) string {
	r := in.Results
	if r == nil {
		return "No results.\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Scenario `%s`, backend `%s`, seed %d: the run is **%s** (%d history ops).\n", r.Scenario, r.Backend, in.Seed, r.Valid, r.Ops)
	cs := r.Checkers
	var counts []string
	if m := cs.Mutex; m != nil {
		counts = append(counts, fmt.Sprintf("%d holds", m.Holds))
		if m.StaleHolders > 0 {
			counts = append(counts, words.Count(m.StaleHolders, "stale holder", "stale holders"))
		}
		if m.DoubleGrants > 0 {
			counts = append(counts, words.Count(m.DoubleGrants, "double grant", "double grants"))
		}
	}
	if l := cs.LostUpdate; l != nil && l.Count > 0 {
		counts = append(counts, words.Count(l.Count, "lost update", "lost updates"))
	}
	if fe := cs.Fencing; fe != nil && fe.Count > 0 {
		counts = append(counts, words.Count(fe.Count, "stale write", "stale writes")+" accepted")
	}
	if len(counts) > 0 {
		fmt.Fprintf(&b, "Counts: %s.\n", strings.Join(counts, ", "))
	}
	if m := cs.Mutex; m != nil && len(m.Violations) > 0 {
		ov := m.Violations[0]
		fmt.Fprintf(&b, "\nFirst violation (%s): %s\n", strings.ReplaceAll(ov.Kind, "-", " "), ov.Description)
		if ov.Kind == checker.StaleHolder {
			if s := Signal(in.Ops, ov); s != "" {
				fmt.Fprintf(&b, "\nThe library's signal: %s.\n", s)
			}
		}
	} else if l := cs.LostUpdate; l != nil && len(l.Violations) > 0 {
		fmt.Fprintf(&b, "\nFirst lost update: %v\n", l.Violations[0])
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "\nNote: %s\n", r.Note)
	}
	return b.String()
}

// serversText lists the run's servers and the versions they reported.
func serversText(r *checker.Results) string {
	if r == nil || r.Servers == nil || len(r.Servers.Versions) == 0 {
		return "Not recorded.\n"
	}
	names := make([]string, 0, len(r.Servers.Versions))
	for n := range r.Servers.Versions {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	mode := r.Servers.Mode
	if mode == "" {
		mode = "local"
	}
	// Servers of one version are said once: "redis-0, redis-1: 7.0.15".
	byVersion := map[string][]string{}
	var order []string
	for _, n := range names {
		v := r.Servers.Versions[n]
		if !slices.Contains(order, v) {
			order = append(order, v)
		}
		byVersion[v] = append(byVersion[v], n)
	}
	for _, v := range order {
		fmt.Fprintf(&b, "- %s: %s\n", strings.Join(byVersion[v], ", "), v)
	}
	fmt.Fprintf(&b, "\nStarted by locktorture as %s servers on 127.0.0.1.\n", mode)
	return b.String()
}
