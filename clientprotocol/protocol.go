// Package clientprotocol runs lock clients as processes of their own that
// speak the client protocol (docs/client-protocol.md): JSON lines,
// requests on the child's stdin, replies and events on its stdout, its
// stderr in client-N.log in the store.
//
// The harness side (Launcher) starts one child per simulated client,
// opens it with the addresses of that client's own links, drives it as a
// backends.Backend (so the client loop is the same in both modes), freezes
// it whole for a pause (SIGSTOP/SIGCONT to its process group) and kills
// it, and anything it started, when the run ends. The child side (Serve)
// is `locktorture client`: it runs a built-in backend's client inside the
// child, built from the given addresses only.
package clientprotocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/locktorture/locktorture/cluster"
)

// Sentinel errors of this package.
var (
	// errProtocol is wrapped when a child breaks the protocol: bad JSON,
	// a reply with an unknown id or type, an unknown event.
	errProtocol = errors.New("client protocol violated")
	// errExited is wrapped when a child exits before it was told to close.
	errExited = errors.New("client process exited")
	// errOpen is wrapped when a child does not answer its open request.
	errOpen = errors.New("client process did not open")
	// errWedged is wrapped when a child stops answering: no reply to a
	// request within its timeout plus a grace, while not paused.
	errWedged = errors.New("client process stopped answering")
)

// Operations of the protocol.
const (
	OpOpen    = "open"
	OpAcquire = "acquire"
	OpRelease = "release"
	OpClose   = "close"
	// opClock is not part of the protocol: it is sent only to a child that
	// announced the "clock" ability (locktorture client does), with no id,
	// and is never answered: the child sets its own clock to the harness's
	// clock of that process.
	opClock = "clock"
)

// Abilities a child may announce in its open reply.
const (
	// abilityExtend: the child renews its leases and sends extend events.
	abilityExtend = "extend"
	// AbilityClock: the child keeps a clock the harness may jump and skew
	// (opClock messages), so client clock faults act on it.
	AbilityClock = "clock"
)

// Reply and event types.
const (
	TypeOK   = "ok"
	TypeFail = "fail"
	TypeInfo = "info"
)

// Events a child may send unasked.
const (
	EventExtend = "extend"
	EventLost   = "lost"
)

// OpenRequest is the open request (docs/client-protocol.md, "The
// conversation"): the client's number, its lease and request timeout, the
// addresses of its own links to every server, what the servers ask it to
// prove, and the backend's options. It is declared here only: the harness
// sends it (Launcher, and CheckClient's open), and the children of this
// module read it as part of Inbound (Serve, locktest). Its fields, their
// names and their order are the protocol's (TestOpenRequestAsDocumented).
type OpenRequest struct {
	ID        int64             `json:"id"`
	Op        string            `json:"op"`
	Process   int               `json:"process"`
	TTLMS     int64             `json:"ttl_ms"`
	TimeoutMS int64             `json:"timeout_ms"`
	Servers   cluster.ServerSet `json:"servers"`
	// Auth is what the servers ask the client to prove, by kind, present
	// only when they ask (docs/client-protocol.md); TLS files are copies
	// the harness wrote (0600) in a private directory of the run.
	Auth    cluster.AuthSet `json:"auth,omitempty"`
	Options map[string]any  `json:"options"`
}

// Inbound is any line the harness writes, as a child reads it: the open
// request's fields, an acquire's or release's key, a clock message's
// offset and rate.
type Inbound struct {
	// ID is the request's id; nil on a line without one (a clock
	// message). It stands in for OpenRequest.ID, which stays zero.
	ID *int64 `json:"id"`
	OpenRequest
	Key      string  `json:"key"`
	OffsetNS int64   `json:"offset_ns"`
	Rate     float64 `json:"rate"`
}

// request is an acquire, release or close request.
type request struct {
	ID  int64  `json:"id"`
	Op  string `json:"op"`
	Key string `json:"key,omitempty"`
}

// clockMessage is the opClock message: the offset of the process's clock from
// real time and its rate (clock seconds per real second).
type clockMessage struct {
	Op       string  `json:"op"`
	OffsetNS int64   `json:"offset_ns"`
	Rate     float64 `json:"rate"`
}

// Message is one line a child writes: a reply (ID set) or an event.
type Message struct {
	// ID is the request answered; nil for an event.
	ID *int64 `json:"id,omitempty"`
	// Type is ok, fail or info (a reply, or an extend event's completion).
	Type string `json:"type,omitempty"`
	// Error says why, on fail and info.
	Error string `json:"error,omitempty"`
	// LeaseMS is the lease the client may count on (acquire and extend ok).
	LeaseMS *int64 `json:"lease_ms,omitempty"`
	// Fence is the grant's fencing token (acquire ok).
	Fence *int64 `json:"fence,omitempty"`
	// Abilities are announced in the open reply.
	Abilities []string `json:"abilities,omitempty"`
	// Event is extend or lost for an unsolicited event.
	Event string `json:"event,omitempty"`
	// Key is the event's lock key.
	Key string `json:"key,omitempty"`
	// Phase is "invoke" for an extend event's start.
	Phase string `json:"phase,omitempty"`

	// Nodes name the servers that granted a quorum lock (an extension:
	// locktorture client sends it; other children may).
	Nodes []string `json:"nodes,omitempty"`
	// Conn is what the harness's resource needs of the grant's session
	// (an extension of locktorture client; see Conn).
	Conn *Conn `json:"conn,omitempty"`
}

// Conn carries across the process boundary the part of a grant's session
// that the harness's resource acts on.
type Conn struct {
	// EtcdLockKey is an etcd grant's lock key (the etcd resource guards
	// writes with its create revision).
	EtcdLockKey string `json:"etcd_lock_key,omitempty"`
	// PGVersion is pg-optimistic's row version read at acquire.
	PGVersion *int64 `json:"pg_version,omitempty"`
}

// maxLine is the longest line a child may send (the protocol's limit).
const maxLine = 1 << 20

// newLineScanner reads a child's stdout line by line, up to maxLine a
// line: a longer one ends the scan, and lineErr names it.
func newLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	return sc
}

// lineErr says why a line scanner stopped: a line over the protocol's
// limit is a protocol error naming the limit; any other error is
// returned as it is.
func lineErr(err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%w: it sent a line over %s (the protocol's limit)", errProtocol, sizeText(maxLine))
	}
	return err
}

// parseMessage decodes and checks one line from a child.
func parseMessage(line []byte) (Message, error) {
	var m Message
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return m, fmt.Errorf("%w: not a JSON object: %s", errProtocol, clip(line))
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%w: bad JSON (%v): %s", errProtocol, err, clip(line))
	}
	if dec.More() {
		return m, fmt.Errorf("%w: more than one JSON value on a line: %s", errProtocol, clip(line))
	}
	switch {
	case m.Event != "":
		switch m.Event {
		case EventExtend:
			if m.Phase != "invoke" && m.Phase != "" {
				return m, fmt.Errorf("%w: extend event with unknown phase %q: %s", errProtocol, m.Phase, clip(line))
			}
			if m.Phase == "" && !knownType(m.Type) {
				return m, fmt.Errorf("%w: extend event with unknown type %q: %s", errProtocol, m.Type, clip(line))
			}
		case EventLost:
		default:
			return m, fmt.Errorf("%w: unknown event %q: %s", errProtocol, m.Event, clip(line))
		}
		if m.Key == "" {
			return m, fmt.Errorf("%w: %s event without a key: %s", errProtocol, m.Event, clip(line))
		}
	case m.ID == nil:
		return m, fmt.Errorf("%w: a reply without an id: %s", errProtocol, clip(line))
	case !knownType(m.Type):
		return m, fmt.Errorf("%w: reply with unknown type %q (ok, fail, info): %s", errProtocol, m.Type, clip(line))
	}
	return m, nil
}

func knownType(t string) bool { return t == TypeOK || t == TypeFail || t == TypeInfo }

// clip shortens a line for an error message, as showLine shows it: its
// secrets masked before it is cut, quoted printably.
func clip(b []byte) string { return showLine(b, shownLine) }
