package reports

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"path/filepath"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// FileShrink is the page `locktorture shrink` writes into the run's
// directory.
const FileShrink = "shrink.html"

// ShrinkFault is one fault of the original run on the shrink page.
type ShrinkFault struct {
	// Step is the fault as a script step ("pause process 0 on read after
	// 2.1s for 2.3s").
	Step string
	// Kept is set when the shrunk scenario still has it (perhaps shorter
	// or earlier): a fault that matters.
	Kept bool
}

// ShrinkInfo is what shrink.html shows.
type ShrinkInfo struct {
	// Scenario, Backend and Seed name the original run; Dir is its store
	// directory.
	Scenario, Backend, Dir string
	Seed                   int64
	// Checker is the checker every kept candidate failed, Reruns how many
	// runs each candidate had.
	Checker string
	Reruns  int
	// OriginalShape and ShrunkShape say each side's size in words.
	OriginalShape, ShrunkShape string
	// The original run and one failing run of the shrunk scenario.
	OriginalOps     []history.Op
	OriginalResults *checker.Results
	ShrunkOps       []history.Op
	ShrunkResults   *checker.Results
	// Faults are the original run's faults, in order.
	Faults []ShrinkFault
	// Steps are the shrunk scenario's steps.
	Steps []string
	// YAML is shrunk.yaml; Command reproduces it.
	YAML, Command string
	// Search says what the search took ("31 candidates, 58 runs, 6m12s").
	Search string
	// Interrupted is set when the search was stopped before it finished.
	Interrupted bool
}

var shrinkTmpl = template.Must(template.New("shrink").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>shrink: {{.I.Scenario}} / {{.I.Backend}} (seed {{.I.Seed}})</title>
<style>
body{font-family:sans-serif;margin:2em;max-width:70em}
pre{background:#f4f4f4;padding:.8em;overflow-x:auto}
.kept{color:#b00;font-weight:bold} .dropped{color:#888;text-decoration:line-through}
img{max-width:100%;border:1px solid #ddd}
</style></head><body>
<h1>{{.I.Scenario}} / {{.I.Backend}} (seed {{.I.Seed}}): shrunk</h1>
<p>From <code>{{.I.Dir}}</code>: {{.I.OriginalShape}} &rarr; <b>{{.I.ShrunkShape}}</b>, which made <b>{{.I.Checker}}</b> fail on each of {{.I.Reruns}} runs.
Search: {{.I.Search}}.{{if .I.Interrupted}} <b>Interrupted: this is the smallest failing scenario found before the search was stopped.</b>{{end}}</p>
<h2>Reproduce</h2>
<pre>{{.I.Command}}</pre>
<h2>Timelines</h2>
<p>Above, the original run; below, one failing run of the shrunk scenario. Each on its own time scale; red bars are overlapping holds, shading the faults.</p>
{{if .Original}}<p><img alt="original timeline" src="{{.Original}}"></p>{{end}}
{{if .Shrunk}}<p><img alt="shrunk timeline" src="{{.Shrunk}}"></p>{{end}}
<h2>Faults</h2>
<p>{{.KeptCount}} of the original {{len .I.Faults}} faults matter (kept, in red); the rest were dropped and the failure stayed.</p>
<ol>{{range .I.Faults}}<li class="{{if .Kept}}kept{{else}}dropped{{end}}">{{.Step}}</li>{{end}}</ol>
<p>The shrunk scenario's faults (perhaps moved earlier and made shorter):</p>
<ul>{{range .I.Steps}}<li>{{.}}</li>{{end}}</ul>
<h2>shrunk.yaml</h2>
<pre>{{.I.YAML}}</pre>
</body></html>
`))

// shrinkHTML renders shrink.html.
func shrinkHTML(info ShrinkInfo) ([]byte, error) {
	v := struct {
		I                ShrinkInfo
		Original, Shrunk template.URL
		KeptCount        int
	}{I: info}
	for _, f := range info.Faults {
		if f.Kept {
			v.KeptCount++
		}
	}
	img := func(ops []history.Op, res *checker.Results, head string) (template.URL, error) {
		if len(ops) == 0 || res == nil {
			return "", nil
		}
		b, err := renderSafe(func() ([]byte, error) { return timelinePNG(ops, res, head) })
		if err != nil {
			return "", err
		}
		return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b)), nil
	}
	var err error
	if v.Original, err = img(info.OriginalOps, info.OriginalResults, "original: "+info.OriginalShape); err != nil {
		return nil, fmt.Errorf("original timeline: %w", err)
	}
	if v.Shrunk, err = img(info.ShrunkOps, info.ShrunkResults, "shrunk: "+info.ShrunkShape); err != nil {
		return nil, fmt.Errorf("shrunk timeline: %w", err)
	}
	var buf bytes.Buffer
	if err := shrinkTmpl.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("shrink.html: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteShrink writes shrink.html into dir, atomically.
func WriteShrink(dir string, info ShrinkInfo) error {
	b, err := shrinkHTML(info)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, FileShrink), b)
}
