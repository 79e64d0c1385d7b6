package workload_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/workload"
)

// runW runs the workload with the given gates, recording into rec and
// telling observe (if any) of every op.
func runW(ctx context.Context, stop <-chan struct{}, c workload.Config, b backends.Backend, res workload.Resource, rec *history.Recorder, gates []*clientfault.Gate, observe func(history.Op)) error {
	if observe != nil {
		rec.SetObserver(observe)
	}
	procs := &workload.Procs{Gates: gates}
	for p := range gates {
		procs.Clocks = append(procs.Clocks, clientfault.NewClock())
		procs.History = append(procs.History, rec.Proc(p))
	}
	return workload.Run(ctx, stop, c, b, res, procs)
}

func newGates(n int) []*clientfault.Gate {
	gs := make([]*clientfault.Gate, n)
	for i := range gs {
		gs[i] = clientfault.NewGate()
	}
	return gs
}

func mutexBackend(t *testing.T) backends.Backend {
	t.Helper()
	_, factory, err := backends.Lookup("mutex")
	if err != nil {
		t.Fatal(err)
	}
	b, err := factory(context.Background(), backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func cfg(clients int) workload.Config {
	return workload.Config{
		Clients:   clients,
		Keys:      []string{"k0"},
		Hold:      2 * time.Millisecond,
		ThinkMin:  time.Millisecond,
		ThinkMax:  3 * time.Millisecond,
		OpTimeout: time.Second,
		Seed:      1,
	}
}

// rounds counts each process's completed rounds (release completions) and
// signals when a process reaches a target.
type rounds struct {
	mu     sync.Mutex
	n      map[int]int
	target map[int]int
	reach  chan int
}

func newRounds() *rounds {
	return &rounds{n: map[int]int{}, target: map[int]int{}, reach: make(chan int, 100)}
}

func (r *rounds) observe(op history.Op) {
	if op.F != history.Release || op.Type == history.Invoke {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[op.Process]++
	if r.n[op.Process] == r.target[op.Process] {
		r.reach <- op.Process
	}
}

// byProcess splits a history per client process.
func byProcess(ops []history.Op) map[int][]history.Op {
	out := map[int][]history.Op{}
	for _, op := range ops {
		out[op.Process] = append(out[op.Process], op)
	}
	return out
}

func shape(ops []history.Op) []string {
	s := make([]string, len(ops))
	for i, op := range ops {
		s[i] = string(op.Type) + " " + op.F
	}
	return s
}

var fullRound = []string{
	"invoke acquire", "ok acquire",
	"invoke read", "ok read",
	"invoke write", "ok write",
	"invoke release", "ok release",
}

// TestRunMutex drives three clients through the mutex backend and the
// memory resource, then checks the history's structure.
func TestRunMutex(t *testing.T) {
	const clients = 3
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	res, err := workload.NewMemory(workload.FenceNone)
	if err != nil {
		t.Fatal(err)
	}
	rs := newRounds()
	for p := range clients {
		rs.target[p] = 1
	}
	stop := make(chan struct{})
	// Stop after ~200ms, but never before every client has done one round,
	// so the assertions below hold on any machine.
	go func() {
		<-time.After(200 * time.Millisecond)
		for range clients {
			<-rs.reach
		}
		close(stop)
	}()
	err = runW(context.Background(), stop, cfg(clients), mutexBackend(t), res, rec, newGates(clients), rs.observe)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := workload.FinalReads(context.Background(), []string{"k0"}, res, rec); err != nil {
		t.Fatal(err)
	}
	ops := rec.History()
	if err := history.Validate(context.Background(), ops); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	// Every invoke has a completion.
	open := map[int]history.Op{}
	for _, op := range ops {
		if op.Type == history.Invoke {
			open[op.Process] = op
		} else {
			delete(open, op.Process)
		}
	}
	if len(open) != 0 {
		t.Errorf("invocations without completion: %v", open)
	}

	final := ops[len(ops)-1]
	ops = ops[:len(ops)-2]
	per := byProcess(ops)
	if len(per) != clients {
		t.Fatalf("%d processes in the history, want %d", len(per), clients)
	}
	var writes int
	for p, pops := range per {
		if p < 0 || p >= clients {
			t.Fatalf("unexpected process %d", p)
		}
		// Each client finishes its round when stopped: only whole rounds,
		// in order.
		if len(pops)%len(fullRound) != 0 || len(pops) == 0 {
			t.Fatalf("process %d: %d ops, not whole rounds: %v", p, len(pops), shape(pops))
		}
		for r := 0; r < len(pops); r += len(fullRound) {
			round := pops[r : r+len(fullRound)]
			if got := shape(round); !reflect.DeepEqual(got, fullRound) {
				t.Fatalf("process %d round %d: %v, want %v", p, r/len(fullRound), got, fullRound)
			}
			for _, op := range round {
				if op.Key != "k0" {
					t.Errorf("process %d: op on key %q", p, op.Key)
				}
				if op.Fence != nil || op.LeaseMS != nil {
					t.Errorf("process %d: the mutex backend has no fence or lease, got %+v", p, op)
				}
			}
			read, ok := round[3].Int()
			if !ok {
				t.Fatalf("process %d: read value %s", p, round[3].Value)
			}
			for _, w := range round[4:6] {
				if v, ok := w.Int(); !ok || v != read+1 {
					t.Errorf("process %d: %s write of %s after reading %d", p, w.Type, w.Value, read)
				}
			}
			writes++
		}
	}
	if final.F != history.FinalRead || final.Type != history.OK || final.Process != 0 {
		t.Fatalf("last op %+v, want an ok final-read of process 0", final)
	}
	v, ok := final.Int()
	if !ok || v < 1 || v > int64(writes) {
		t.Errorf("final read %s after %d accepted writes", final.Value, writes)
	}
}

// TestRunPausedFromStart: a client whose gate is closed before the run
// records nothing while the others work.
func TestRunPausedFromStart(t *testing.T) {
	const clients = 2
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	res, _ := workload.NewMemory(workload.FenceNone)
	gates := newGates(clients)
	gates[0].Pause()
	rs := newRounds()
	rs.target[1] = 5
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	var before []history.Op
	go func() {
		<-rs.reach // process 1 did five whole rounds
		before = rec.History()
		close(stop)
		cancel() // the paused client only wakes for its gate or ctx
	}()
	if err := runW(ctx, stop, cfg(clients), mutexBackend(t), res, rec, gates, rs.observe); err != nil {
		t.Fatalf("Run: %v", err)
	}
	per := byProcess(before)
	if p0 := per[0]; len(p0) > 1 || (len(p0) == 1 && shape(p0)[0] != "invoke acquire") {
		t.Errorf("paused process 0 recorded %v while process 1 did 5 rounds", shape(p0))
	}
	if len(per[1]) < 5*len(fullRound) {
		t.Errorf("process 1 recorded only %d ops", len(per[1]))
	}
	if p0 := byProcess(rec.History())[0]; len(p0) > 1 {
		t.Errorf("paused process 0 recorded %v by the end", shape(p0))
	}
	if !gates[0].Paused() {
		t.Error("Run resumed a gate it does not own")
	}
	if err := history.Validate(context.Background(), rec.History()); err != nil {
		t.Error(err)
	}
}

// TestRunPausedMidRound pauses client 0 from the observer right after its
// first read, as the nemesis does: it stops there, still holding the lock in
// its own mind, and finishes its round (a stale write) when it wakes.
func TestRunPausedMidRound(t *testing.T) {
	const clients = 2
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	res, _ := workload.NewMemory(workload.FenceNone)
	gates := newGates(clients)
	// Once process 0 is frozen, count process 1's rounds; after three,
	// take a snapshot, stop the run and wake process 0.
	var (
		mu      sync.Mutex
		paused  bool
		p1Later int
		reached = make(chan struct{})
	)
	observe := func(op history.Op) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case op.Process == 0 && op.Type == history.OK && op.F == history.Read && !paused:
			gates[0].Pause()
			paused = true
		case op.Process == 1 && op.F == history.Release && op.Type != history.Invoke && paused:
			p1Later++
			if p1Later == 3 {
				close(reached)
			}
		}
	}
	stop := make(chan struct{})
	frozenCh := make(chan []history.Op, 1)
	go func() {
		<-reached
		frozenCh <- byProcess(rec.History())[0]
		close(stop)
		gates[0].Resume()
	}()
	if err := runW(context.Background(), stop, cfg(clients), mutexBackend(t), res, rec, gates, observe); err != nil {
		t.Fatalf("Run: %v", err)
	}
	frozen := <-frozenCh
	if got := shape(frozen); !reflect.DeepEqual(got, fullRound[:4]) {
		t.Errorf("while frozen process 0 recorded %v, want %v", got, fullRound[:4])
	}
	p0 := byProcess(rec.History())[0]
	if got := shape(p0); !reflect.DeepEqual(got, fullRound) {
		t.Fatalf("process 0 recorded %v, want exactly one round %v", got, fullRound)
	}
	read, _ := p0[3].Int()
	if w, ok := p0[5].Int(); !ok || w != read+1 {
		t.Errorf("woken write %s after reading %d", p0[5].Value, read)
	}
	// Process 1 wrote while process 0 was frozen between its read and its
	// write: the woken client's write is stale (a lost update).
	var between int
	for _, op := range byProcess(rec.History())[1] {
		if op.F == history.Write && op.Type == history.OK && op.Time >= p0[3].Time && op.Time <= p0[4].Time {
			between++
		}
	}
	// (The first of the three rounds counted may have written before
	// the pause; the other two certainly wrote during it.)
	if between < 2 {
		t.Errorf("%d writes of process 1 between process 0's read and write, want at least 2", between)
	}
	if err := history.Validate(context.Background(), rec.History()); err != nil {
		t.Error(err)
	}
}

func TestRunArguments(t *testing.T) {
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	res, _ := workload.NewMemory(workload.FenceNone)
	stop := make(chan struct{})
	close(stop)
	if err := runW(context.Background(), stop, cfg(2), mutexBackend(t), res, rec, newGates(1), nil); err == nil {
		t.Error("1 gate for 2 clients accepted")
	}
	c := cfg(1)
	c.Keys = nil
	if err := runW(context.Background(), stop, c, mutexBackend(t), res, rec, newGates(1), nil); err == nil {
		t.Error("no keys accepted")
	}
	// Already stopped: nothing is recorded.
	if err := runW(context.Background(), stop, cfg(2), mutexBackend(t), res, rec, newGates(2), nil); err != nil {
		t.Error(err)
	}
	if rec.Len() != 0 {
		t.Errorf("%d ops recorded by a run stopped before it started", rec.Len())
	}
}

// fakeBackend hands out scripted clients.
type fakeBackend struct {
	mu        sync.Mutex
	failAt    int // Client(p) fails for p == failAt (-1: never)
	made      []*fakeClient
	newClient func() *fakeClient
}

func (b *fakeBackend) Client(ctx context.Context, env backends.ClientEnv) (backends.Client, error) {
	p := env.Process
	if p == b.failAt {
		return nil, errors.New("no route to host")
	}
	c := b.newClient()
	b.mu.Lock()
	b.made = append(b.made, c)
	b.mu.Unlock()
	return c, nil
}

func (b *fakeBackend) Close() error { return nil }

type fakeClient struct {
	grant      backends.Grant
	acquireErr error
	releaseErr error
	panicMsg   string
	onAcquire  func()
	closed     bool
}

func (c *fakeClient) Acquire(ctx context.Context, key string) (backends.Grant, error) {
	if c.onAcquire != nil {
		c.onAcquire()
	}
	if c.panicMsg != "" {
		panic(c.panicMsg)
	}
	return c.grant, c.acquireErr
}

func (c *fakeClient) Release(ctx context.Context, key string, g backends.Grant) error {
	return c.releaseErr
}

func (c *fakeClient) Close() error { c.closed = true; return nil }

// TestRoundOutcomes runs one client for exactly one round against scripted
// lock clients and resources, and checks what it records.
func TestRoundOutcomes(t *testing.T) {
	lost := make(chan struct{})
	close(lost)
	tests := []struct {
		name    string
		client  fakeClient
		mode    string
		prepare func(*workload.Memory) // before the run
		want    []string               // type f of each op
		check   func(t *testing.T, ops []history.Op)
	}{
		{
			name:   "busy",
			client: fakeClient{acquireErr: backends.ErrBusy},
			want:   []string{"invoke acquire", "fail acquire"},
			check: func(t *testing.T, ops []history.Op) {
				if ops[1].Error != "busy" {
					t.Errorf("error %q", ops[1].Error)
				}
			},
		},
		{
			name:   "timeout is info, never fail",
			client: fakeClient{acquireErr: fmt.Errorf("set: %w", context.DeadlineExceeded)},
			want:   []string{"invoke acquire", "info acquire"},
			check: func(t *testing.T, ops []history.Op) {
				if !strings.HasPrefix(ops[1].Error, "timeout") {
					t.Errorf("error %q", ops[1].Error)
				}
			},
		},
		{
			name:   "unknown error is info",
			client: fakeClient{acquireErr: errors.New("connection reset")},
			want:   []string{"invoke acquire", "info acquire"},
		},
		{
			name:   "fence and lease recorded",
			client: fakeClient{grant: backends.Grant{Fence: f(7), Lease: 1500 * time.Millisecond, HasLease: true}},
			mode:   workload.FenceWrites,
			want:   fullRound,
			check: func(t *testing.T, ops []history.Op) {
				if ops[1].FenceOr(-1) != 7 || ops[1].LeaseMS == nil || *ops[1].LeaseMS != 1500 {
					t.Errorf("acquire ok %+v", ops[1])
				}
				for _, op := range ops[2:] {
					if op.FenceOr(-1) != 7 {
						t.Errorf("%s %s carries fence %v", op.Type, op.F, fmtFence(op.Fence))
					}
				}
				if v, _ := ops[5].Int(); v != 1 {
					t.Errorf("wrote %s", ops[5].Value)
				}
			},
		},
		{
			name:   "lease without HasLease is not recorded",
			client: fakeClient{grant: backends.Grant{Lease: time.Second}},
			want:   fullRound,
			check: func(t *testing.T, ops []history.Op) {
				if ops[1].LeaseMS != nil {
					t.Errorf("lease_ms %d recorded", *ops[1].LeaseMS)
				}
			},
		},
		{
			name:    "stale read rejected is fail, no write",
			client:  fakeClient{grant: backends.Grant{Fence: f(5)}},
			mode:    workload.FenceAll,
			prepare: func(m *workload.Memory) { m.Read(context.Background(), "k0", backends.Grant{Fence: f(6)}) },
			want:    []string{"invoke acquire", "ok acquire", "invoke read", "fail read", "invoke release", "ok release"},
			check: func(t *testing.T, ops []history.Op) {
				if !strings.Contains(ops[3].Error, "stale") {
					t.Errorf("error %q", ops[3].Error)
				}
			},
		},
		{
			name:    "stale write rejected is fail",
			client:  fakeClient{grant: backends.Grant{Fence: f(5)}},
			mode:    workload.FenceWrites,
			prepare: func(m *workload.Memory) { m.Write(context.Background(), "k0", 41, backends.Grant{Fence: f(6)}) },
			want:    []string{"invoke acquire", "ok acquire", "invoke read", "ok read", "invoke write", "fail write", "invoke release", "ok release"},
			check: func(t *testing.T, ops []history.Op) {
				if !strings.Contains(ops[5].Error, "stale") {
					t.Errorf("error %q", ops[5].Error)
				}
				if v, _ := ops[5].Int(); v != 42 {
					t.Errorf("rejected write carries %s, want 42", ops[5].Value)
				}
			},
		},
		{
			name:   "lost lock is recorded and abandons the critical section",
			client: fakeClient{grant: backends.Grant{Lost: lost}},
			want:   []string{"invoke acquire", "ok acquire", "invoke lost", "ok lost", "invoke release", "ok release"},
			check: func(t *testing.T, ops []history.Op) {
				if ops[2].Time != ops[3].Time || ops[2].Key != "k0" || ops[3].Key != "k0" {
					t.Errorf("lost recorded as %+v, %+v: want one time, key k0", ops[2], ops[3])
				}
			},
		},
		{
			name:   "release not held is fail",
			client: fakeClient{releaseErr: backends.ErrNotHeld},
			want:   []string{"invoke acquire", "ok acquire", "invoke read", "ok read", "invoke write", "ok write", "invoke release", "fail release"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mode := tc.mode
			if mode == "" {
				mode = workload.FenceNone
			}
			res, err := workload.NewMemory(mode)
			if err != nil {
				t.Fatal(err)
			}
			if tc.prepare != nil {
				tc.prepare(res)
			}
			stop := make(chan struct{})
			var once sync.Once
			b := &fakeBackend{failAt: -1, newClient: func() *fakeClient {
				c := tc.client
				// Stop as soon as the first acquire is made: the client
				// then finishes exactly this one round.
				c.onAcquire = func() { once.Do(func() { close(stop) }) }
				return &c
			}}
			rec := history.NewRecorder(nil, history.RecorderOptions{})
			if err := runW(context.Background(), stop, cfg(1), b, res, rec, newGates(1), nil); err != nil {
				t.Fatalf("Run: %v", err)
			}
			ops := rec.History()
			if got := shape(ops); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("recorded %v, want %v", got, tc.want)
			}
			if err := history.Validate(context.Background(), ops); err != nil {
				t.Error(err)
			}
			if tc.check != nil {
				tc.check(t, ops)
			}
			if !b.made[0].closed {
				t.Error("client not closed")
			}
		})
	}
}

func TestRunClientErrors(t *testing.T) {
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	res, _ := workload.NewMemory(workload.FenceNone)
	stop := make(chan struct{})
	close(stop)

	b := &fakeBackend{failAt: 2, newClient: func() *fakeClient { return &fakeClient{} }}
	err := runW(context.Background(), stop, cfg(3), b, res, rec, newGates(3), nil)
	if err == nil || !strings.Contains(err.Error(), "client 2") || !strings.Contains(err.Error(), "no route") {
		t.Errorf("got %v, want the client 2 error", err)
	}
	for i, c := range b.made {
		if !c.closed {
			t.Errorf("client %d made before the failure was not closed", i)
		}
	}

	// A panicking client is an error, not a crash.
	stop2 := make(chan struct{})
	b2 := &fakeBackend{failAt: -1, newClient: func() *fakeClient { return &fakeClient{panicMsg: "boom"} }}
	err = runW(context.Background(), stop2, cfg(1), b2, res, rec, newGates(1), nil)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panicking client: got %v", err)
	}
}

// TestClientsEnterInOrder: each client's first acquire is invoked only after
// the previous client's first acquire completed, so client 0 asks first.
func TestClientsEnterInOrder(t *testing.T) {
	const clients = 4
	rec := history.NewRecorder(nil, history.RecorderOptions{Keep: true})
	res, err := workload.NewMemory(workload.FenceNone)
	if err != nil {
		t.Fatal(err)
	}
	rs := newRounds()
	for p := range clients {
		rs.target[p] = 1
	}
	stop := make(chan struct{})
	go func() {
		for range clients {
			<-rs.reach
		}
		close(stop)
	}()
	if err := runW(context.Background(), stop, cfg(clients), mutexBackend(t), res, rec, newGates(clients), rs.observe); err != nil {
		t.Fatal(err)
	}
	firstInvoke, firstDone := map[int]int64{}, map[int]int64{}
	for _, op := range rec.History() {
		if op.F != history.Acquire {
			continue
		}
		m := firstDone
		if op.Type == history.Invoke {
			m = firstInvoke
		}
		if _, seen := m[op.Process]; !seen {
			m[op.Process] = op.Index
		}
	}
	for p := 1; p < clients; p++ {
		if firstInvoke[p] < firstDone[p-1] {
			t.Errorf("process %d asked first at op %d, before process %d's first reply at op %d", p, firstInvoke[p], p-1, firstDone[p-1])
		}
	}
}

// TestEntryDoesNotWaitForAPausedClient: client 0, paused from the start,
// holds the others back only briefly.
func TestEntryDoesNotWaitForAPausedClient(t *testing.T) {
	const clients = 2
	rec := history.NewRecorder(nil, history.RecorderOptions{Keep: true})
	res, err := workload.NewMemory(workload.FenceNone)
	if err != nil {
		t.Fatal(err)
	}
	gates := newGates(clients)
	gates[0].Pause()
	rs := newRounds()
	rs.target[1] = 3
	stop := make(chan struct{})
	go func() {
		<-rs.reach
		close(stop)
		gates[0].Resume()
	}()
	if err := runW(context.Background(), stop, cfg(clients), mutexBackend(t), res, rec, gates, rs.observe); err != nil {
		t.Fatal(err)
	}
	if n := len(byProcess(rec.History())[1]); n < 3 {
		t.Errorf("process 1 recorded %d ops while process 0 was paused", n)
	}
}

// TestStopEndsThink checks that closing stop ends a client's think time
// between rounds at once, rather than the run waiting it out, and that
// nothing more is recorded for it: each client did its one whole round.
func TestStopEndsThink(t *testing.T) {
	const clients = 2
	rec := history.NewRecorder(nil, history.RecorderOptions{})
	res, err := workload.NewMemory(workload.FenceNone)
	if err != nil {
		t.Fatal(err)
	}
	rs := newRounds()
	for p := range clients {
		rs.target[p] = 1
	}
	c := cfg(clients)
	c.ThinkMin, c.ThinkMax = time.Hour, time.Hour
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- runW(context.Background(), stop, c, mutexBackend(t), res, rec, newGates(clients), rs.observe)
	}()
	for range clients {
		<-rs.reach
	}
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute): // the think is an hour: a minute tells the two apart on any machine
		t.Fatal("Run did not return a minute after stop: it waits out the clients' hour of think time")
	}
	for p, ops := range byProcess(rec.History()) {
		if got := shape(ops); !slices.Equal(got, fullRound) {
			t.Errorf("process %d recorded %v, want one whole round %v", p, got, fullRound)
		}
	}
}
