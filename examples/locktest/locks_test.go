package locks_test

import (
	"testing"

	locks "github.com/locktorture/locktorture/examples/locktest"
	"github.com/locktorture/locktorture/locktest"
)

func TestMain(m *testing.M) { locktest.Main(m) }

// The token lock is safe until a client pauses past its lease: under
// Kleppmann's pause the paused client wakes as a stale holder. The claim
// "stale holder possible" holds; the claim "safe" does not.
func TestTokenLock(t *testing.T) {
	res := locktest.Run(t, locktest.Suite{New: locks.NewTokenLock, Claim: locktest.StaleHolderPossible,
		Scenarios: []string{"baseline", "kleppmann-pause"}})
	if r := res[1]; r != nil {
		if ok, _ := r.Meets(locktest.Safe); ok {
			t.Error("kleppmann-pause met the claim \"safe\" for a token lock")
		}
	}
}

// A real pause (the client process stopped whole) freezes the watchdog
// goroutine too: the lease runs out and the woken client is a stale holder.
func TestWatchdogLock(t *testing.T) {
	locktest.Run(t, locktest.Suite{New: locks.NewWatchdogLock, Claim: locktest.StaleHolderPossible,
		Scenarios: []string{"renew-pause"}})
}

// In-process clients pause cooperatively: the watchdog goroutine keeps
// renewing through the pause, so the same scenario cannot catch it — the
// reason locktest runs clients as processes by default.
func TestWatchdogLockInProcessMissesIt(t *testing.T) {
	locktest.Run(t, locktest.Suite{New: locks.NewWatchdogLock, Claim: locktest.Safe, InProcess: true,
		Scenarios: []string{"renew-pause"}})
}

// The fenced lock still has stale holders, but the resource rejects their
// writes by the fencing token: nothing is lost.
func TestFencedLock(t *testing.T) {
	locktest.Run(t, locktest.Suite{New: locks.NewFencedLock, Claim: locktest.FencedWrites,
		Scenarios: []string{"kleppmann-fenced"}})
}

// The token lock as a row of locktorture compare's table, beside the
// built-in token lock and the plain-DEL one, under a pause: its cells are
// subtests judged against its claim, and go test -v logs the table and
// where compare.html is.
func TestCompareTokenLock(t *testing.T) {
	locktest.Compare(t, locktest.Comparison{New: locks.NewTokenLock, Name: "TokenLock", Claim: new(locktest.StaleHolderPossible),
		Families: []string{"pause"}, Beside: []string{"redis-token", "redis-naive"}})
}
