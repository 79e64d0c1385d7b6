package procmem

import "testing"

// TestRSS: the process holds at least what it just allocated and touched.
func TestRSS(t *testing.T) {
	before := RSS()
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	after := RSS()
	if before <= 0 || after < 64<<20 || after < before {
		t.Fatalf("RSS %d before, %d after touching 64 MiB", before, after)
	}
	_ = b[len(b)-1]
}
