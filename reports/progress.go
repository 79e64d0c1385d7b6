package reports

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/locktorture/locktorture/history"
)

// Progress shows how a run or a matrix is going while it runs. On a
// terminal it keeps one status line redrawn in place: a bar of the run's
// planned duration, the time elapsed, ops recorded and per second, holds,
// overlaps and stale holders so far (seen live, see Live), the harness's
// memory and cells done. Elsewhere (CI logs) it
// prints a plain line every Interval instead. Lines printed through Printf
// or Writer appear above the bar. A nil *Progress does nothing.
type Progress struct {
	w        io.Writer
	tty      bool
	interval time.Duration

	mu         sync.Mutex
	running    bool
	label      string
	planned    time.Duration
	started    time.Time // StartRun
	live       *Live     // the run's counts
	overlaps   bool
	cellsDone  int
	cellsTotal int
	drawn      bool
	lastLine   time.Time

	stop chan struct{}
	done chan struct{}
}

// NewProgress shows progress on w: a redrawn bar when w is a terminal,
// otherwise a plain line every interval while a run goes on (zero: none).
// Close it when done.
func NewProgress(w io.Writer, interval time.Duration) *Progress {
	p := &Progress{w: w, tty: IsTerminal(w), interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

// IsTerminal reports whether w is a character device (a terminal), and
// TERM does not say "dumb".
func IsTerminal(w io.Writer) bool {
	if u, ok := w.(interface{ Unwrap() io.Writer }); ok {
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *Progress) loop() {
	defer close(p.done)
	tick := 250 * time.Millisecond
	if !p.tty {
		tick = time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.mu.Lock()
			switch {
			case !p.running:
			case p.tty:
				p.drawLocked(now)
			case p.interval > 0 && now.Sub(p.lastLine) >= p.interval:
				p.lastLine = now
				fmt.Fprintln(p.w, p.statusLocked(now))
			}
			p.mu.Unlock()
		}
	}
}

// SetCells sets how many cells of a matrix are done, of how many.
func (p *Progress) SetCells(done, total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.cellsDone, p.cellsTotal = done, total
	p.mu.Unlock()
}

// StartRun starts counting a run named label, planned to let clients run
// for planned. With overlaps set, Observe counts holds of one key by
// different processes at once as violations (not for lock-free backends,
// whose holds overlap by design).
func (p *Progress) StartRun(label string, planned time.Duration, overlaps bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.running, p.label, p.planned, p.overlaps = true, label, planned, overlaps
	p.started, p.lastLine = now, now
	p.live = &Live{}
}

// Observe counts one recorded op. It is safe to call from the recorder's
// goroutine while the ticker draws.
func (p *Progress) Observe(op history.Op) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return
	}
	p.live.Observe(&op)
}

// counts returns the ops and violations counted in the current (or last) run.
func (p *Progress) counts() (ops, violations int) {
	if p == nil {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live == nil {
		return 0, 0
	}
	c := p.live.Counts(time.Now())
	if !p.overlaps {
		return c.Ops, 0
	}
	return c.Ops, c.Overlaps
}

// EndRun stops counting and clears the bar.
func (p *Progress) EndRun() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = false
	p.clearLocked()
}

// Printf prints a line above the bar.
func (p *Progress) Printf(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	s := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(p.w, s)
	if p.running && p.tty {
		p.drawLocked(time.Now())
	}
}

// Writer returns a writer whose lines appear above the bar (for log lines).
func (p *Progress) Writer() io.Writer { return progressWriter{p} }

type progressWriter struct{ p *Progress }

func (w progressWriter) Write(b []byte) (int, error) {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	n, err := p.w.Write(b)
	if p.running && p.tty && len(b) > 0 && b[len(b)-1] == '\n' {
		p.drawLocked(time.Now())
	}
	return n, err
}

// Close stops the ticker and clears the bar.
func (p *Progress) Close() {
	if p == nil {
		return
	}
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	p.running = false
	p.clearLocked()
	p.mu.Unlock()
}

func (p *Progress) clearLocked() {
	if p.drawn {
		io.WriteString(p.w, "\r\033[K")
		p.drawn = false
	}
}

// statusLocked says where the run is, in one line without a bar.
func (p *Progress) statusLocked(now time.Time) string {
	var b strings.Builder
	if p.label != "" {
		b.WriteString(p.label + ": ")
	}
	c := p.live.Counts(now)
	if c.Elapsed == 0 {
		fmt.Fprintf(&b, "starting (%s)", roundDur(now.Sub(p.started)))
	} else {
		b.WriteString(c.Line(p.planned, p.overlaps))
		if c.Elapsed > p.planned && p.planned > 0 {
			b.WriteString(", healing and checking")
		}
	}
	if p.cellsTotal > 0 {
		fmt.Fprintf(&b, ", cells %d/%d done", p.cellsDone, p.cellsTotal)
	}
	return b.String()
}

// drawLocked redraws the bar in place.
func (p *Progress) drawLocked(now time.Time) {
	const barW = 24
	frac := 0.0
	c := p.live.Counts(now)
	if c.Elapsed > 0 && p.planned > 0 {
		frac = min(1, float64(c.Elapsed)/float64(p.planned))
	}
	fill := int(frac * barW)
	bar := strings.Repeat("#", fill) + strings.Repeat("-", barW-fill)
	var b strings.Builder
	b.WriteString("\r\033[K")
	if p.label != "" {
		b.WriteString(p.label + " ")
	}
	fmt.Fprintf(&b, "[%s] %s", bar, c.short(p.planned, p.overlaps))
	if p.cellsTotal > 0 {
		fmt.Fprintf(&b, " · cells %d/%d", p.cellsDone, p.cellsTotal)
	}
	if c.Elapsed == 0 {
		b.WriteString(" · starting servers")
	} else if frac >= 1 {
		b.WriteString(" · checking")
	}
	s := b.String()
	if w := termWidth(p.w); len([]rune(s)) > w+4 { // +4: the escape sequence
		s = string([]rune(s)[:w+3])
	}
	io.WriteString(p.w, s)
	p.drawn = true
}

// termWidth is the terminal's width less one (the bar must not wrap):
// asked of the terminal, else $COLUMNS, else 120.
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 20 {
			return int(ws.Col) - 1
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 20 {
		return n - 1
	}
	return 119
}

func roundDur(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(100 * time.Millisecond).String()
}
