package checker

// This file holds the result types of each checker. Times are nanoseconds on
// the history's clock; durations are nanoseconds too.

// Hold is one span in which a process believed it held a key: from its
// acquire ok to its next release invoke on that key (or the history's end).
type Hold struct {
	Process int    `json:"process"`
	Key     string `json:"key"`
	Start   int64  `json:"start"`
	End     int64  `json:"end"`
	// Open is set when the history ended before the release.
	Open bool `json:"open,omitempty"`
	// Fence is the acquire's fencing token, when it had one.
	Fence *int64 `json:"fence,omitempty"`
	// LeaseEnd is when the holder's lease ran out by its own reckoning (the
	// latest acquire/extend ok time plus its lease_ms); nil without a lease.
	LeaseEnd *int64 `json:"lease_end,omitempty"`
	// LeaseMS is the lease length granted by the acquire (nil without a lease).
	LeaseMS *int64 `json:"lease_ms,omitempty"`
	// Nodes are the servers that granted a quorum lock (from the acquire's
	// value {"nodes": [...]}), when the backend says.
	Nodes []string `json:"nodes,omitempty"`
	// leases is every grant and extension of the lease, in order.
	leases []leaseSpan
}

// Overlap kinds.
const (
	// StaleHolder: the earlier holder's lease had run out when the later
	// holder acquired — Kleppmann's paused client.
	StaleHolder = "stale-holder"
	// DoubleGrant: the lock service granted the key while the earlier
	// holder's lease was still valid (or it had no lease).
	DoubleGrant = "double-grant"
)

// Overlap is one mutex violation: two holds of one key by different
// processes overlapping in time. Earlier is the hold that began first. In an
// Overlap, each hold's LeaseEnd (and LeaseMS) is its lease as it stood when
// the overlap began, not as a later extension left it: that is what makes
// the overlap a stale holder or a double grant.
type Overlap struct {
	Key     string `json:"key"`
	Earlier Hold   `json:"earlier"`
	Later   Hold   `json:"later"`
	// Start is when the overlap began (the later acquire ok); Length how long it lasted.
	Start  int64 `json:"start"`
	Length int64 `json:"length"`
	// Kind is StaleHolder or DoubleGrant.
	Kind string `json:"kind"`
	// Description says it in plain words.
	Description string `json:"description"`
}

// MutexResult is the mutex checker's result.
type MutexResult struct {
	Valid Validity `json:"valid"`
	// Holds counts every hold seen.
	Holds int `json:"holds"`
	// RolledBack counts grants made inside a transaction that then rolled
	// back (the release's COMMIT certainly failed): void holds, not counted
	// in Holds, since nothing done through them took effect.
	RolledBack int `json:"rolled_back_holds,omitempty"`
	// Count is the number of overlaps; Violations lists them, capped.
	Count        int       `json:"count"`
	StaleHolders int       `json:"stale_holders"`
	DoubleGrants int       `json:"double_grants"`
	Violations   []Overlap `json:"violations"`
	Error        string    `json:"error,omitempty"`
}

// LinearizableResult is the porcupine checker's result.
type LinearizableResult struct {
	Valid Validity `json:"valid"`
	// Keys checked, and those found not linearizable.
	Keys        int      `json:"keys"`
	BadKeys     []string `json:"bad_keys,omitempty"`
	UnknownKeys []string `json:"unknown_keys,omitempty"`
	// Ops is the number of lock operations given to porcupine.
	Ops int `json:"ops"`
	// TimeoutMS is the time limit used.
	TimeoutMS int64 `json:"timeout_ms"`
	// Undecided lists the stretches of a key's history (segments, when
	// checked as a stream) porcupine could not decide within the limit:
	// what made a key unknown. Never skipped silently.
	Undecided []Undecided `json:"undecided,omitempty"`
	Error     string      `json:"error,omitempty"`
}

// Undecided is a stretch of one key's history the linearizable checker
// could not decide.
type Undecided struct {
	Key string `json:"key"`
	// From and To are the stretch's first and last op times; Ops its ops.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	Ops  int   `json:"ops"`
	// Limit says which limit it hit.
	Limit string `json:"limit"`
}

// StaleWrite is an accepted write whose fence was below one already accepted.
type StaleWrite struct {
	Key     string `json:"key"`
	Process int    `json:"process"`
	// Index is the write's ok op in the history.
	Index int64 `json:"index"`
	Time  int64 `json:"time"`
	Fence int64 `json:"fence"`
	// Highest is the highest fence accepted before the write was invoked.
	Highest     int64  `json:"highest"`
	Description string `json:"description"`
}

// Rejection is a read or write the resource refused as stale: the fence did its job.
type Rejection struct {
	Key     string `json:"key"`
	Process int    `json:"process"`
	F       string `json:"f"`
	Index   int64  `json:"index"`
	Time    int64  `json:"time"`
	Fence   *int64 `json:"fence,omitempty"`
	Error   string `json:"error"`
	// Description says it in plain words.
	Description string `json:"description"`
}

// FencingResult is the fencing checker's result.
type FencingResult struct {
	Valid Validity `json:"valid"`
	// FencedWrites counts accepted writes that carried a fence.
	FencedWrites int `json:"fenced_writes"`
	// UnfencedWrites counts accepted writes without one.
	UnfencedWrites int `json:"unfenced_writes"`
	// Count of stale writes that got through; Violations lists them, capped.
	Count      int          `json:"count"`
	Violations []StaleWrite `json:"violations"`
	// RejectedStale counts reads and writes the resource refused as stale.
	RejectedStale int         `json:"rejected_stale"`
	Rejections    []Rejection `json:"rejections,omitempty"`
	Error         string      `json:"error,omitempty"`
}

// LostUpdateViolation is one lost update.
type LostUpdateViolation struct {
	Key string `json:"key"`
	// Kind is "duplicate-write" or "final-read".
	Kind string `json:"kind"`
	// Value is the value written twice, or the final read.
	Value int64 `json:"value"`
	// Processes wrote the duplicate value (duplicate-write only).
	Processes []int `json:"processes,omitempty"`
	// Indexes of the ops involved.
	Indexes []int64 `json:"indexes,omitempty"`
	// Accepted is the number of accepted writes to the key (final-read only).
	Accepted    int    `json:"accepted,omitempty"`
	Description string `json:"description"`
}

// LostUpdateResult is the lost-update checker's result.
type LostUpdateResult struct {
	Valid Validity `json:"valid"`
	// Keys checked; AcceptedWrites in all.
	Keys           int `json:"keys"`
	AcceptedWrites int `json:"accepted_writes"`
	// FinalReads seen (one per key is expected).
	FinalReads int                   `json:"final_reads"`
	Count      int                   `json:"count"`
	Violations []LostUpdateViolation `json:"violations"`
	// Unread names the keys with accepted writes but no final read: on
	// them only duplicate writes could be checked, so with no violation the
	// result is unknown, and Note says why.
	Unread []string `json:"unread_keys,omitempty"`
	Note   string   `json:"note,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// Latency holds percentiles in nanoseconds.
type Latency struct {
	Count int   `json:"count"`
	P50   int64 `json:"p50"`
	P90   int64 `json:"p90"`
	P99   int64 `json:"p99"`
	Max   int64 `json:"max"`
}

// KeyAvailability is how long a key had no holder.
type KeyAvailability struct {
	Key   string `json:"key"`
	Holds int    `json:"holds"`
	// Unheld is nanoseconds with no holder; Fraction is Unheld / the run's span.
	Unheld   int64   `json:"unheld"`
	Fraction float64 `json:"unheld_fraction"`
	// Refused is the part of Unheld in which a client had asked for the
	// key and was not granted it yet (busy, no answer): from the first
	// acquire invoked while nobody held it to the invoke of the acquire
	// that was granted. The rest of Unheld is the clients' own pace (from
	// a release to the next acquire, and that acquire's round trip).
	// RefusedFraction is Refused / the run's span.
	Refused         int64   `json:"refused,omitempty"`
	RefusedFraction float64 `json:"refused_fraction,omitempty"`
}

// StatsResult is the stats checker's result. It is always valid unless the
// history is malformed; it never decides safety.
type StatsResult struct {
	Valid Validity `json:"valid"`
	// Ops counts ops by f, then by type ("acquire" -> "ok" -> 12).
	Ops map[string]map[string]int `json:"ops"`
	// Clients is the number of client processes.
	Clients int `json:"clients"`
	// Span is the time from the first to the last op.
	Span int64 `json:"span"`
	// Holds counts granted acquires; HoldsPerSecond over Span.
	Holds          int     `json:"holds"`
	HoldsPerSecond float64 `json:"holds_per_second"`
	// OpsPerSecond counts completions per second over Span.
	OpsPerSecond float64 `json:"ops_per_second"`
	// AcquireLatency of acquires that were granted; AcquireAll of every completed acquire.
	AcquireLatency Latency           `json:"acquire_latency"`
	AcquireAll     Latency           `json:"acquire_latency_all"`
	Availability   []KeyAvailability `json:"availability"`
	// NemesisOps counts nemesis ops.
	NemesisOps int    `json:"nemesis_ops"`
	Error      string `json:"error,omitempty"`
}
