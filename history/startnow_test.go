package history

import (
	"testing"
	"time"
)

// TestStartNow: time 0 moves to StartNow's instant while nothing has been
// recorded, and stays put once something has.
func TestStartNow(t *testing.T) {
	r := NewRecorder(nil, RecorderOptions{Keep: true})
	defer r.Close()
	time.Sleep(20 * time.Millisecond)
	before := time.Now()
	if !r.StartNow() {
		t.Fatal("StartNow refused with nothing recorded")
	}
	// Every nanosecond Now counts was spent after before (the 20ms slept
	// before StartNow are not counted).
	if n, most := r.Now(), int64(time.Since(before)); n < 0 || n > most {
		t.Fatalf("Now() = %d after StartNow, want 0..%d", n, most)
	}
	if _, err := r.Record(Op{Process: 0, Type: Invoke, F: Acquire, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	at := r.Now()
	if r.StartNow() {
		t.Fatal("StartNow moved time 0 after an op was recorded")
	}
	if r.Now() < at {
		t.Fatal("time went backwards")
	}
}
