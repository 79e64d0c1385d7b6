// Package history defines the operation record that every other part of
// locktorture speaks, and the streaming JSONL reader and writer for it.
//
// The format is a contract (docs/history.md): one JSON object per line, field
// names as in Jepsen's histories. Of ours it imports only internal/secret
// (a recorded error never quotes a password).
package history

import (
	"encoding/json"
	"strconv"
)

// Type is the kind of an operation record: an invocation or one of the three
// completions.
type Type string

// The four operation types.
const (
	Invoke Type = "invoke" // the client is about to do something
	OK     Type = "ok"     // it certainly happened
	Fail   Type = "fail"   // it certainly did not happen
	Info   Type = "info"   // nobody knows (timeout, lost connection); also every nemesis op
)

// Client operation names (the `f` field).
const (
	Acquire   = "acquire"
	Release   = "release"
	Extend    = "extend"
	Read      = "read"
	Write     = "write"
	FinalRead = "final-read"
	// Lost records the moment a client learned it no longer holds a lock
	// (its lease watchdog gave up): an invoke immediately followed by its
	// ok, at the same time, on the key. The client's hold ends there.
	Lost = "lost"
)

// NemesisProcess is the process number of every nemesis operation.
const NemesisProcess = -1

// Op is one line of a history.
type Op struct {
	// Index is the position in the history, from 0, without gaps.
	Index int64 `json:"index"`
	// Time is nanoseconds since the run started, on the run's one monotonic clock.
	Time int64 `json:"time"`
	// Process is the client number, or NemesisProcess.
	Process int `json:"process"`
	// Type is invoke, ok, fail or info.
	Type Type `json:"type"`
	// F names the operation: acquire, release, extend, read, write,
	// final-read, lost, or a nemesis action such as start-pause.
	F string `json:"f"`
	// Key is the lock key, which is also the protected resource's key.
	Key string `json:"key,omitempty"`
	// Value is the integer of a read/write/final-read, or a nemesis op's
	// targets and parameters, kept as raw JSON.
	Value json.RawMessage `json:"value,omitempty"`
	// Fence is the fencing token, when there is one.
	Fence *int64 `json:"fence,omitempty"`
	// LeaseMS is, on an acquire/extend ok, how long the client may assume it
	// holds the lock by its own reckoning.
	LeaseMS *int64 `json:"lease_ms,omitempty"`
	// Error says why, on fail and info.
	Error string `json:"error,omitempty"`
	// Tx marks a write made inside the lock's own transaction
	// (pg-advisory-xact with the postgres resource): it takes effect only
	// if the process's release of that key — the COMMIT — completes ok.
	// Checkers judge such a write by its release's outcome. An extension
	// of Jepsen's fields; absent everywhere else.
	Tx bool `json:"tx,omitempty"`
}

// Int returns the Value as an integer, and whether it is one.
func (o *Op) Int() (int64, bool) {
	if len(o.Value) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(o.Value), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// FenceOr returns the fence, or def when there is none.
func (o *Op) FenceOr(def int64) int64 {
	if o.Fence == nil {
		return def
	}
	return *o.Fence
}

// IsNemesis reports whether the op was recorded by the nemesis.
func (o *Op) IsNemesis() bool { return o.Process == NemesisProcess }

// IntValue encodes an integer as an op Value.
func IntValue(v int64) json.RawMessage {
	return json.RawMessage(strconv.AppendInt(nil, v, 10))
}

// IntValues encodes two integers as op Values, in one allocation (a
// client's read and the write of the next value come together).
func IntValues(a, b int64) (json.RawMessage, json.RawMessage) {
	buf := strconv.AppendInt(make([]byte, 0, 40), a, 10)
	n := len(buf)
	buf = strconv.AppendInt(buf, b, 10)
	return json.RawMessage(buf[:n:n]), json.RawMessage(buf[n:len(buf):len(buf)])
}

// ObjectValue encodes any JSON-marshalable value (a nemesis op's targets and
// parameters) as an op Value. It panics only on values JSON cannot encode,
// which is a programming error.
func ObjectValue(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("history: unencodable value: " + err.Error())
	}
	return b
}

// Int64 returns a pointer to v, for the optional Fence and LeaseMS fields.
func Int64(v int64) *int64 { return &v }
