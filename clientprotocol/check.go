// client-check's entry point and its report: Check starts the servers,
// runs the rules (check_rules.go) on two copies of the adapter
// (check_process.go) and returns what it found; Text writes it.

package clientprotocol

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/owner"
)

// CheckOptions say which adapter Check drives and against what.
type CheckOptions struct {
	// Command is the adapter and its arguments; Env adds to the
	// environment.
	Command []string
	Env     map[string]string
	// Servers are the kinds of server to start, as exec.servers names
	// them (default: one redis).
	Servers []string
	// Options are sent as the open request's options.
	Options map[string]any
	// TTL and Timeout are the open request's ttl_ms and timeout_ms
	// (defaults 10s and 300ms: a long lease, so that a lock the adapter
	// keeps is still there when the check looks).
	TTL, Timeout time.Duration
	// Dir receives the servers' and the adapter copies' logs (a temporary
	// directory, removed after, when empty).
	Dir string
	// Progress, when set, is told each step as it starts.
	Progress func(step string)
	// TLS starts the servers with TLS (cluster.Options.TLS), as a run's
	// security: tls does: the open request's auth carries the CA and a
	// client certificate.
	TLS bool
}

// Finding is one rule of the protocol, checked: whether the adapter kept
// it, and what happened, in plain words.
type Finding struct {
	Rule   string `json:"rule"`
	Broken bool   `json:"broken"`
	Says   string `json:"says"`
}

// CheckReport is what Check found.
type CheckReport struct {
	Findings []Finding `json:"findings"`
	// Logs are the adapter copies' stderr logs (empty when Dir was not
	// given: they are removed with the temporary directory).
	Logs []string `json:"logs,omitempty"`
}

// Broken returns the findings whose rule the adapter broke.
func (r *CheckReport) Broken() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Broken {
			out = append(out, f)
		}
	}
	return out
}

// ErrCheck is wrapped when the check itself could not run (a server would
// not start, the adapter could not be started at all).
var ErrCheck = errors.New("client-check")

// Check drives an adapter through the corners of the client protocol
// against real servers it starts: open; acquire of a free key (ok) and of
// a held one (fail busy); release (ok) and release of a key not held
// (fail "not held"); a request whose server is slow past timeout_ms,
// followed at once by the next request; a grant that arrives after the
// harness gave up on it (it must be given back); a link cut and healed
// (timeouts are info, never fail; the adapter reconnects); close; and
// stdin closed without close. Two copies run as clients 0 and 1, each
// through its own link to each server. It returns each rule checked and
// whether the adapter kept it; an error only when the check could not run.
// When ctx ends first (Ctrl-C), it returns no report — it never finished
// checking — and an error saying it was interrupted, wrapping ctx's.
//
// What the adapter wrote is shown with every secret masked (the servers'
// password it was given included) and quoted printably (see showLine); its
// stderr log is masked as it is written. Its temporary directories name
// their owner (owner.Mark) and its copies carry the check's tag (ownerEnv),
// so that should the check be killed with SIGKILL, the next run, check or
// compare removes what it left (owner.Reap, ReapOrphans); Check itself
// first ends what clients of harnesses now gone left running.
func Check(ctx context.Context, opt CheckOptions) (*CheckReport, error) {
	if len(opt.Command) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrCheck)
	}
	if opt.TTL <= 0 {
		opt.TTL = 10 * time.Second
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 300 * time.Millisecond
	}
	if opt.Progress == nil {
		opt.Progress = func(string) {}
	}
	for _, p := range ReapOrphans() {
		opt.Progress(fmt.Sprintf("ended %s, left by a client of a harness that is gone", p))
	}
	me, err := owner.ID()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	dir := opt.Dir
	keepLogs := dir != ""
	if dir == "" {
		d, err := MkdirOwned("locktorture-client-check-")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCheck, err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	cl, err := cluster.New(cluster.Options{LogDir: dir, Locked: true, TLS: opt.TLS})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	defer cl.Close()
	cl.EnableLinks()
	opt.Progress("starting servers: " + strings.Join(orDefaultKind(opt.Servers), ", "))
	if err := cl.StartKinds(ctx, opt.Servers, cluster.StartOptions{}); err != nil {
		if ctx.Err() != nil {
			return nil, interrupted(ctx)
		}
		return nil, fmt.Errorf("%w: %w", ErrCheck, err)
	}
	ck := &conformance{ctx: ctx, opt: opt, dir: dir, cl: cl, rep: &CheckReport{}, done: make(chan struct{}),
		prefix: fmt.Sprintf("lt-check-%d-", time.Now().UnixNano()%1e6),
		tag:    fmt.Sprintf("%s/check-%d", me, launchers.Add(1)), tallies: map[string]*tally{}}
	defer close(ck.done)
	defer ck.killAll()
	ck.run()
	if ctx.Err() != nil {
		// What it found on the way was cut short too (a wait for a reply
		// ended by the interrupt is no "no reply"): no verdict at all.
		return nil, interrupted(ctx)
	}
	if keepLogs {
		for _, a := range ck.adapters {
			ck.rep.Logs = append(ck.rep.Logs, a.logPath)
		}
	}
	return ck.rep, nil
}

// interrupted is Check's error when ctx ended before it finished.
func interrupted(ctx context.Context) error {
	return fmt.Errorf("%w: interrupted before it finished: no verdict on the adapter: %w", ErrCheck, ctx.Err())
}

// orDefaultKind is kinds, or the default kind when none is named.
func orDefaultKind(kinds []string) []string {
	if len(kinds) == 0 {
		return []string{cluster.DefaultKind}
	}
	return kinds
}

// Text writes the report: one line per finding, the broken first, then a
// last line counting them.
func (r *CheckReport) Text() string {
	var sb strings.Builder
	broken := r.Broken()
	for _, f := range broken {
		fmt.Fprintf(&sb, "BROKEN  %-20s %s\n", f.Rule, f.Says)
	}
	for _, f := range r.Findings {
		if !f.Broken {
			fmt.Fprintf(&sb, "ok      %-20s %s\n", f.Rule, f.Says)
		}
	}
	if len(broken) == 0 {
		sb.WriteString("the adapter kept every rule checked (" + strconv.Itoa(len(r.Findings)) + ")\n")
	} else {
		fmt.Fprintf(&sb, "the adapter broke %d of the protocol's rules: fix them before trusting any verdict\n", len(broken))
	}
	return sb.String()
}
