package reports

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// Limits of porcupine's visualisation: past these, the page only says why.
const (
	visMaxOps  = 20000            // client lock ops (invokes and completions)
	visTimeout = 60 * time.Second // time to build the page
)

// lockOps counts the ops porcupine's lock model would be given.
func lockOps(ops []history.Op) int {
	n := 0
	for i := range ops {
		switch ops[i].F {
		case history.Acquire, history.Release, history.Extend, history.Lost:
			if !ops[i].IsNemesis() {
				n++
			}
		}
	}
	return n
}

// linearizabilityHTML returns porcupine's view of the lock history, with
// the run's fault windows listed at the top; when the history is too large
// or the visualisation fails, a small page that says why.
func linearizabilityHTML(ctx context.Context, ops []history.Op, heading string) []byte {
	fs := faults(ops)
	if n := lockOps(ops); n > visMaxOps {
		return notePage(heading, fmt.Sprintf("The history has %s lock operations, more than the %s porcupine's visualisation can show usefully in a browser, so it was not drawn. The linearizable checker's verdict is in results.json; timeline.png shows every hold.", thousands(n), thousands(visMaxOps)), fs)
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		var buf bytes.Buffer
		err := safeVis(ops, &buf, faultAnnotations(fs))
		done <- result{buf.Bytes(), err}
	}()
	ctx, cancel := context.WithTimeout(ctx, visTimeout)
	defer cancel()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		return notePage(heading, fmt.Sprintf("porcupine's visualisation did not finish (%v), so it was not drawn. The linearizable checker's verdict is in results.json.", ctx.Err()), fs)
	}
	if r.err != nil {
		return notePage(heading, "porcupine's visualisation failed: "+r.err.Error(), fs)
	}
	if len(r.b) == 0 {
		return notePage(heading, "porcupine's visualisation produced nothing.", fs)
	}
	banner := faultBanner(heading, fs)
	page := string(r.b)
	if i := strings.Index(page, "<body>"); i >= 0 {
		i += len("<body>")
		return []byte(page[:i] + banner + page[i:])
	}
	return r.b
}

// safeVis runs the checker's visualisation, turning a panic into an error.
func safeVis(ops []history.Op, buf *bytes.Buffer, anns []porcupine.Annotation) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("visualisation crashed: %v", r)
		}
	}()
	return checker.LinearizableVisualization(ops, buf, anns...)
}

// maxAnnotations caps the fault annotations drawn in porcupine's view.
const maxAnnotations = 200

// faultAnnotations turns fault windows into porcupine annotations: on the
// row of each client a fault targets, or on a "nemesis" row for faults of
// the whole system, coloured as in the plots.
func faultAnnotations(fs []fault) []porcupine.Annotation {
	cols := faultColourMap(fs)
	var out []porcupine.Annotation
	for _, f := range fs {
		if len(out) >= maxAnnotations {
			break
		}
		c := cols[f.Kind]
		bg := fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
		a := porcupine.Annotation{Start: f.Start, End: f.End, Description: f.Kind,
			Details: faultWhen(f) + " " + f.Label(), BackgroundColor: bg}
		if len(f.Processes) == 0 {
			a.Tag = "nemesis"
			out = append(out, a)
			continue
		}
		for _, p := range f.Processes {
			a.ClientId = p
			out = append(out, a)
		}
	}
	return out
}

// faultBanner lists the fault windows, as an HTML fragment with inline style.
func faultBanner(heading string, fs []fault) string {
	var b strings.Builder
	b.WriteString(`<div style="font:13px sans-serif;margin:44px 0 12px;padding:8px 12px;background:#f6f6f6;border-left:4px solid #888">`)
	fmt.Fprintf(&b, `<b>%s</b> — porcupine's view of the lock operations, per key. <a href="index.html">back to the report</a><br>`, html.EscapeString(heading))
	if len(fs) == 0 {
		b.WriteString("No faults were injected.")
	} else {
		b.WriteString("Faults (seconds since the run started):<ul style=\"margin:4px 0\">")
		for i, f := range fs {
			if i == 50 {
				fmt.Fprintf(&b, "<li>… and %d more (see history.jsonl)</li>", len(fs)-50)
				break
			}
			b.WriteString("<li>" + html.EscapeString(faultWhen(f)+" "+f.Label()) + "</li>")
		}
		b.WriteString("</ul>")
	}
	b.WriteString("</div>")
	return b.String()
}

// faultWhen says when a fault happened: "1.200s" or "1.200s–3.700s".
func faultWhen(f fault) string {
	if f.Instant {
		return fmt.Sprintf("%.3fs", sec(f.Start))
	}
	s := fmt.Sprintf("%.3fs–%.3fs", sec(f.Start), sec(f.End))
	if f.Open {
		s += " (never stopped)"
	}
	return s
}

// notePage is a small self-contained page standing in for the visualisation.
func notePage(heading, why string, fs []fault) []byte {
	return []byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>linearizability — ` + html.EscapeString(heading) + `</title></head>
<body style="font:14px sans-serif;max-width:60em;margin:2em auto">
` + faultBanner(heading, fs) + `
<p>` + html.EscapeString(why) + `</p>
</body></html>
`)
}
