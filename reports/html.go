package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"slices"
	"sort"
	"strings"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// maxListed caps the violations and faults index.html lists per group.
const maxListed = 20

type (
	indexView struct {
		Title, Scenario, Description         string
		Backend, Resource, Fencing           string
		Seed                                 int64
		Clients, Keys                        string
		Ops                                  int
		Command                              string
		Verdict, VerdictClass                string
		Expected, ExpectedClass, ExpectedMsg string
		Note                                 string
		Truncated                            bool
		Checkers                             []checkerView
		Violations                           []violationView
		Faults                               []string
		FaultsMore                           int
		Settings                             [][2]string
		Servers                              string
		Plots                                [][2]string // file, alt text
		Links                                [][2]string // file, what
		Summary                              string
	}
	checkerView struct {
		Name, Verdict, Class, Detail, Error string
		Rows                                [][2]string
	}
	violationView struct {
		Title, Class string
		Texts        []string
		More         int
	}
)

func verdictClass(v checker.Validity) string { return v.String() }

// checkerRows are the key numbers of each checker, for its table.
func checkerRows(c *checker.Checkers, name string) [][2]string {
	d := func(ns int64) string { return fmtDur(ns) }
	n := func(i int) string { return thousands(i) }
	switch name {
	case checker.NameMutex:
		m := c.Mutex
		return [][2]string{{"holds", n(m.Holds)}, {"overlaps", n(m.Count)}, {"stale holders", n(m.StaleHolders)}, {"double grants", n(m.DoubleGrants)}}
	case checker.NameLinearizable:
		l := c.Linearizable
		rows := [][2]string{{"keys", n(l.Keys)}, {"lock ops", n(l.Ops)}, {"time limit", d(l.TimeoutMS * 1e6)}}
		if len(l.BadKeys) > 0 {
			rows = append(rows, [2]string{"not linearizable", keyList(l.BadKeys)})
		}
		if len(l.UnknownKeys) > 0 {
			rows = append(rows, [2]string{"undecided", keyList(l.UnknownKeys)})
		}
		return rows
	case checker.NameFencing:
		f := c.Fencing
		return [][2]string{{"fenced writes", n(f.FencedWrites)}, {"unfenced writes", n(f.UnfencedWrites)}, {"stale writes accepted", n(f.Count)}, {"stale reads/writes rejected", n(f.RejectedStale)}}
	case checker.NameLostUpdate:
		l := c.LostUpdate
		rows := [][2]string{{"keys", n(l.Keys)}, {"accepted writes", n(l.AcceptedWrites)}, {"final reads", n(l.FinalReads)}, {"lost updates", n(l.Count)}}
		if len(l.Unread) > 0 {
			rows = append(rows, [2]string{"no final read (cannot tell)", keyList(l.Unread)})
		}
		return rows
	case checker.NameStats:
		s := c.Stats
		lat := func(l checker.Latency) string {
			if l.Count == 0 {
				return "none"
			}
			return fmt.Sprintf("p50 %s · p90 %s · p99 %s · max %s (%s)", d(l.P50), d(l.P90), d(l.P99), d(l.Max), n(l.Count))
		}
		rows := [][2]string{
			{"clients", n(s.Clients)}, {"span", d(s.Span)}, {"holds", n(s.Holds)},
			{"holds/s", fmt.Sprintf("%.2f", s.HoldsPerSecond)}, {"ops/s", fmt.Sprintf("%.1f", s.OpsPerSecond)},
			{"acquire latency (granted)", lat(s.AcquireLatency)}, {"acquire latency (all)", lat(s.AcquireAll)},
			{"nemesis ops", n(s.NemesisOps)},
		}
		fs := make([]string, 0, len(s.Ops))
		for f := range s.Ops {
			fs = append(fs, f)
		}
		sort.Strings(fs)
		for _, f := range fs {
			var parts []string
			for _, t := range []string{"invoke", "ok", "fail", "info"} {
				if k, ok := s.Ops[f][t]; ok {
					parts = append(parts, fmt.Sprintf("%s %s", t, n(k)))
				}
			}
			rows = append(rows, [2]string{"ops: " + f, strings.Join(parts, " · ")})
		}
		for i, a := range s.Availability {
			if i == 10 {
				rows = append(rows, [2]string{"unheld", fmt.Sprintf("… %d more keys", len(s.Availability)-10)})
				break
			}
			rows = append(rows, [2]string{"unheld " + a.Key, fmt.Sprintf("%s (%.1f%%; refused %.1f%%, the rest the clients' pace)", d(a.Unheld), 100*a.Fraction, 100*a.RefusedFraction)})
		}
		return rows
	}
	return nil
}

// indexHTML renders the run's self-contained report page.
func indexHTML(ops []history.Op, res *checker.Results, info RunInfo) ([]byte, error) {
	v := indexView{
		Title:       heading(res, info),
		Scenario:    first(info.Scenario, res.Scenario, "(unnamed run)"),
		Description: info.Description,
		Backend:     first(info.Backend, res.Backend),
		Resource:    first(info.Resource, res.Resource),
		Fencing:     info.Fencing,
		Seed:        first(info.Seed, res.Seed),
		Ops:         first(res.Ops, len(ops)),
		Command:     info.Command,
		Verdict:     strings.ToUpper(res.Valid.String()),
		Note:        res.Note,
		Truncated:   res.Truncated,
		Summary:     first(info.Summary, Summary(res, 20)),
	}
	v.VerdictClass = verdictClass(res.Valid)
	if info.Clients > 0 {
		v.Clients = thousands(info.Clients)
	}
	if info.Keys > 0 {
		v.Keys = thousands(info.Keys)
	}
	if info.Expected != "" {
		v.Expected = info.Expected
		// The matrix's judgment: the overall verdict and each checker's.
		if ok, why := scenarios.Judge(res, info.Expected, info.ExpectedCheckers); ok {
			v.ExpectedClass, v.ExpectedMsg = "valid", "as expected"
		} else {
			v.ExpectedClass, v.ExpectedMsg = "invalid", "NOT as expected: "+why
		}
	}
	for _, l := range checkerLines(&res.Checkers) {
		v.Checkers = append(v.Checkers, checkerView{
			Name: l.name, Verdict: l.verdict.String(), Class: verdictClass(l.verdict),
			Detail: l.detail, Error: l.err, Rows: checkerRows(&res.Checkers, l.name),
		})
	}
	if ws := staleWindows(res.Checkers.Mutex); len(ws) > 0 {
		k := min(len(ws), maxListed)
		v.Violations = append(v.Violations, violationView{Title: "in short: stale holders", Class: "invalid", Texts: ws[:k], More: len(ws) - k})
	}
	for _, g := range violationGroups(&res.Checkers) {
		class := "invalid"
		if strings.Contains(g.title, "rejected") {
			class = "valid"
		}
		k := min(len(g.texts), maxListed)
		v.Violations = append(v.Violations, violationView{Title: g.title, Class: class, Texts: g.texts[:k], More: g.total - k})
	}
	fs := faults(ops)
	for i, f := range fs {
		if i == 50 {
			v.FaultsMore = len(fs) - 50
			break
		}
		v.Faults = append(v.Faults, faultWhen(f)+"  "+f.Label())
	}
	v.Servers = serversLine(info.Servers)
	keys := make([]string, 0, len(info.Settings))
	for k := range info.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v.Settings = append(v.Settings, [2]string{k, info.Settings[k]})
	}
	v.Plots = [][2]string{
		{FileTimeline, "holds per process over time, overlaps in red, faults shaded"},
		{FileLatency, "latency of every client op over time"},
		{FileRate, "completed ops per second"},
	}
	if info.Density != nil {
		v.Plots = append([][2]string{{fileDensity, "the whole run: holds and overlaps per key over time, faults shaded"}}, v.Plots...)
		v.Plots[1][1] += " (" + info.Excerpt + ")"
		v.Plots[2][1] += " (" + info.Excerpt + ")"
		v.Plots[3][1] += " over the whole run"
	}
	v.Links = [][2]string{
		{FileHistory, "the history, one op per line"},
		{FileResults, "the checkers' results"},
		{FileScenario, "the effective settings, to repeat the run"},
		{FileRunLog, "the harness's log"},
		{FileLinearizability, "porcupine's view of the lock ops"},
		{FileJUnit, "JUnit XML for CI"},
	}
	for _, l := range info.Logs {
		v.Links = append(v.Links, [2]string{l, "server log"})
	}
	var buf bytes.Buffer
	if err := indexTmpl.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("render index: %w", err)
	}
	return buf.Bytes(), nil
}

var indexTmpl = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328;max-width:1100px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:26px;margin:8px 0 2px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.desc{color:#57606a;margin:0 0 12px}
.verdict{display:inline-block;font-size:40px;font-weight:800;letter-spacing:1px;padding:6px 22px;border-radius:8px;color:#fff;margin:8px 0}
.verdict.valid{background:#1a7f37}.verdict.invalid{background:#cf222e}.verdict.unknown{background:#bf8700}
.tag{display:inline-block;font-weight:700;padding:1px 8px;border-radius:4px;color:#fff;font-size:12px;text-transform:uppercase}
.tag.valid{background:#1a7f37}.tag.invalid{background:#cf222e}.tag.unknown{background:#bf8700}
.expected{font-size:16px;margin-left:14px}.expected.valid{color:#1a7f37}.expected.invalid{color:#cf222e;font-weight:700}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #d0d7de;padding:3px 10px;text-align:left;vertical-align:top}th{background:#f6f8fa}
table.meta td:first-child,table.kv td:first-child{color:#57606a;white-space:nowrap}
.checkers{display:flex;flex-wrap:wrap;gap:14px}.checker{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;min-width:300px;flex:1}
.checker h3{margin:0 0 4px;font-size:15px}.checker p{margin:2px 0 6px;color:#57606a}
.err{color:#cf222e}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;overflow-x:auto;white-space:pre-wrap}
ul.viol li{margin:2px 0}ul.viol.invalid li::marker{color:#cf222e}ul.viol.valid li::marker{color:#1a7f37}
img{max-width:100%;border:1px solid #d0d7de;margin:6px 0}
.note{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;border-radius:6px}
code{font-family:ui-monospace,Menlo,Consolas,monospace}
</style>
</head>
<body>
<h1>{{.Scenario}}</h1>
{{with .Description}}<p class="desc">{{.}}</p>{{end}}
<div><span class="verdict {{.VerdictClass}}">{{.Verdict}}</span>{{if .Expected}}<span class="expected {{.ExpectedClass}}">expected {{.Expected}} — {{.ExpectedMsg}}</span>{{end}}</div>
{{if .Truncated}}<p class="note">The history's last line was cut off (the harness was killed while writing it) and was dropped.</p>{{end}}
{{with .Note}}<p class="note">{{.}}</p>{{end}}
<table class="meta">
{{with .Backend}}<tr><td>backend</td><td><code>{{.}}</code></td></tr>{{end}}
{{with .Resource}}<tr><td>resource</td><td><code>{{.}}</code></td></tr>{{end}}
{{with .Fencing}}<tr><td>fencing</td><td><code>{{.}}</code></td></tr>{{end}}
<tr><td>seed</td><td><code>{{.Seed}}</code></td></tr>
{{with .Clients}}<tr><td>clients</td><td>{{.}}</td></tr>{{end}}
{{with .Keys}}<tr><td>keys</td><td>{{.}}</td></tr>{{end}}
<tr><td>ops</td><td>{{.Ops}}</td></tr>
{{with .Servers}}<tr><td>servers</td><td>{{.}}</td></tr>{{end}}
</table>
{{with .Command}}<p>Repeat this run:</p><pre><code>{{.}}</code></pre>{{end}}

<h2>Checkers</h2>
<div class="checkers">
{{range .Checkers}}<div class="checker"><h3>{{.Name}} <span class="tag {{.Class}}">{{.Verdict}}</span></h3>
<p>{{.Detail}}</p>{{with .Error}}<p class="err">error: {{.}}</p>{{end}}
<table class="kv">{{range .Rows}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>{{end}}</table>
</div>
{{else}}<p>No checker ran.</p>{{end}}
</div>

{{if .Violations}}<h2>What went wrong</h2>
{{range .Violations}}<h3>{{.Title}}</h3>
<ul class="viol {{.Class}}">{{range .Texts}}<li>{{.}}</li>{{end}}{{if gt .More 0}}<li>… and {{.More}} more (see <a href="results.json">results.json</a>)</li>{{end}}</ul>
{{end}}{{end}}

<h2>Timeline</h2>
{{range .Plots}}<p><a href="{{index . 0}}"><img src="{{index . 0}}" alt="{{index . 1}}"></a></p>
{{end}}

<h2>Faults</h2>
{{if .Faults}}<ul>{{range .Faults}}<li><code>{{.}}</code></li>{{end}}{{if gt .FaultsMore 0}}<li>… and {{.FaultsMore}} more (see <a href="history.jsonl">history.jsonl</a>)</li>{{end}}</ul>
{{else}}<p>No faults were injected.</p>{{end}}

<h2>Files</h2>
<ul>{{range .Links}}<li><a href="{{index . 0}}">{{index . 0}}</a> — {{index . 1}}</li>{{end}}</ul>

{{if .Settings}}<h2>Settings</h2>
<table class="kv">{{range .Settings}}<tr><td>{{index . 0}}</td><td><code>{{index . 1}}</code></td></tr>{{end}}</table>{{end}}

<h2>Summary</h2>
<pre>{{.Summary}}</pre>
</body>
</html>
`))

// serversLine says where the servers came from, in one line: "docker:
// redis 7.0.15 (locktorture-servers:bookworm); postgres 15.18 (...)".
func serversLine(s *checker.ServerSource) string {
	if s == nil {
		return ""
	}
	kindOf := func(name string) string {
		if k, ok := cluster.ServerKind(name); ok {
			return k
		}
		name, _, _ = strings.Cut(name, "-")
		return name
	}
	versions := map[string][]string{}
	for name, v := range s.Versions {
		k := kindOf(name)
		if !slices.Contains(versions[k], v) {
			versions[k] = append(versions[k], v)
		}
	}
	kinds := make([]string, 0, len(versions))
	for k := range versions {
		kinds = append(kinds, k)
	}
	for k := range s.Images {
		if _, ok := versions[k]; !ok {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		vs := versions[k]
		sort.Strings(vs)
		p := strings.TrimSpace(k + " " + strings.Join(vs, ", "))
		if img := s.Images[k]; img != "" {
			p += " (" + img + ")"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return s.Mode
	}
	return s.Mode + ": " + strings.Join(parts, "; ")
}
