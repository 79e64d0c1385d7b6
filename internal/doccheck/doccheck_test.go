package doccheck

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/locktorture/locktorture/findings"
)

// root is the repository's top, seen from this package's directory.
var root = filepath.Join("..", "..")

// readmeMaxLines and demoWithin: the README is a front page, with the
// demo near its top.
const (
	readmeMaxLines = 250
	demoWithin     = 30
	maxLineWidth   = 200
)

// narrowPages are the pages whose lines outside tables stay under
// maxLineWidth characters (a markdown table row cannot wrap; prose and
// code blocks can).
var narrowPages = []string{
	"README.md", "CONTRIBUTING.md",
	"docs/choosing-a-lock.md", "docs/commands.md", "docs/backends.md", "docs/nemeses.md",
	"docs/scenarios.md", "docs/servers.md", "docs/store.md", "docs/shrink.md", "docs/ci.md",
	"docs/locktest.md",
}

// pages returns README.md, CONTRIBUTING.md and every docs/*.md, relative
// to root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "CONTRIBUTING.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// mdLine is one line of a markdown file with whether it lies inside a
// fenced code block.
type mdLine struct {
	n    int
	text string
	code bool
}

// readLines reads a markdown file into lines, marking fenced code.
func readLines(t *testing.T, page string) []mdLine {
	t.Helper()
	f, err := os.Open(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mdLine
	fence := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		s := sc.Text()
		trim := strings.TrimLeft(s, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~")):
			fence = trim[:3]
			out = append(out, mdLine{n, s, true})
		case fence != "":
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			out = append(out, mdLine{n, s, true})
		default:
			out = append(out, mdLine{n, s, false})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	inlineRE   = regexp.MustCompile(`\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRE   = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	htmlIDRE   = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	schemeRE   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// slug is GitHub's anchor for a heading's text: the rendered text in
// lower case, every character but letters, marks, numbers, connector
// punctuation (_), spaces and hyphens dropped, each space a hyphen.
func slug(heading string) string {
	// The rendered text: a link shows its text, code its content.
	h := inlineRE.ReplaceAllString(heading, "$1")
	h = strings.ReplaceAll(h, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors a markdown page offers: its headings'
// slugs (a repeated one gets -1, -2, ... as GitHub numbers them) and
// the names of its <a name> or <a id> tags.
func anchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range readLines(t, page) {
		if l.code {
			continue
		}
		for _, m := range htmlIDRE.FindAllStringSubmatch(l.text, -1) {
			out[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// link is one link of a page: where it is and what it points at.
type link struct {
	page   string
	line   int
	target string
}

// links returns every link and image of a page outside code: inline
// ones (text may span lines) and reference definitions.
func links(t *testing.T, page string) []link {
	t.Helper()
	var out []link
	var para []mdLine
	flush := func() {
		if len(para) == 0 {
			return
		}
		// A paragraph joined, with each line's start kept to name the line.
		var b strings.Builder
		starts := make([]int, len(para))
		for i, l := range para {
			starts[i] = b.Len()
			b.WriteString(codeSpanRE.ReplaceAllStringFunc(l.text, func(s string) string { return strings.Repeat(" ", len(s)) }))
			b.WriteByte('\n')
		}
		text := b.String()
		for _, m := range inlineRE.FindAllStringSubmatchIndex(text, -1) {
			at := 0
			for i, s := range starts {
				if s <= m[0] {
					at = i
				}
			}
			out = append(out, link{page, para[at].n, text[m[4]:m[5]]})
		}
		para = para[:0]
	}
	for _, l := range readLines(t, page) {
		if l.code || strings.TrimSpace(l.text) == "" {
			flush()
			continue
		}
		if m := refDefRE.FindStringSubmatch(l.text); m != nil {
			out = append(out, link{page, l.n, m[1]})
			continue
		}
		para = append(para, l)
	}
	flush()
	return out
}

// TestRelativeLinksResolve: every relative link of README.md,
// CONTRIBUTING.md and docs/*.md names a file or directory that exists,
// and an #anchor names a heading of its markdown target.
func TestRelativeLinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	checked := 0
	for _, page := range pages(t) {
		for _, l := range links(t, page) {
			if l.target == "" || schemeRE.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(l.target, "#")
			target := page
			if path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(page), path))
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", l.page, l.line, l.target, target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if cache[target] == nil {
				cache[target] = anchors(t, target)
			}
			if !cache[target][anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading whose anchor is #%s", l.page, l.line, l.target, target, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link extraction is broken")
	}
}

// TestSlug pins the slug rules the link check relies on to anchors
// GitHub gives these headings.
func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Your own lock as a row: `--exec`", "your-own-lock-as-a-row---exec"},
		{"A Go lock from `go test`: `locktest.Compare`", "a-go-lock-from-go-test-locktestcompare"},
		{"pause — the holder frozen past its lease", "pause--the-holder-frozen-past-its-lease"},
		{"More machines: shards", "more-machines-shards"},
		{"via: pgbouncer", "via-pgbouncer"},
		{"backend_options", "backend_options"},
		{"See [the servers file](servers-file.md)", "see-the-servers-file"},
		{"1. Run an adapter", "1-run-an-adapter"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// TestLinkExtraction: links in code are not links; a link's text may
// span lines (the link is named by the line it starts on); a title after
// the target is not part of it; a reference definition is a link.
func TestLinkExtraction(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "p.md")
	src := "a [one](a.md#x) and `[no](b.md)`\n" +
		"[two\nlines](c.md \"title\") ![img](d.png)\n" +
		"\n```\n[no](e.md)\n```\n" +
		"[ref]: f.md\n"
	if err := os.WriteFile(page, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := root
	root = dir
	defer func() { root = saved }()
	var got []string
	for _, l := range links(t, "p.md") {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	want := "1:a.md#x 2:c.md 3:d.png 8:f.md"
	if strings.Join(got, " ") != want {
		t.Errorf("links = %v, want %s", got, want)
	}
}

// TestReadmeIsAFrontPage: README.md is at most readmeMaxLines lines, with
// `make demo` in its first demoWithin, and its findings table gives every
// finding's `locktorture repro ID`.
func TestReadmeIsAFrontPage(t *testing.T) {
	lines := readLines(t, "README.md")
	if len(lines) > readmeMaxLines {
		t.Errorf("README.md is %d lines, over %d: move the detail to docs/", len(lines), readmeMaxLines)
	}
	demo := 0
	for _, l := range lines {
		if strings.Contains(l.text, "make demo") {
			demo = l.n
			break
		}
	}
	if demo == 0 || demo > demoWithin {
		t.Errorf("README.md: `make demo` first at line %d, want within the first %d lines", demo, demoWithin)
	}
	all := ""
	for _, l := range lines {
		all += l.text + "\n"
	}
	for _, id := range findings.IDs() {
		if !strings.Contains(all, "`locktorture repro "+id+"`") {
			t.Errorf("README.md's findings table has no `locktorture repro %s`", id)
		}
	}
}

// TestNarrowPages: the pages of narrowPages have no line over
// maxLineWidth characters but table rows.
func TestNarrowPages(t *testing.T) {
	for _, page := range narrowPages {
		for _, l := range readLines(t, page) {
			if w := len([]rune(l.text)); w > maxLineWidth && !strings.HasPrefix(strings.TrimSpace(l.text), "|") {
				t.Errorf("%s:%d: %d characters, over %d: wrap it", page, l.n, w, maxLineWidth)
			}
		}
	}
}
