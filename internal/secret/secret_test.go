package secret

import (
	"bytes"
	"testing"
)

// TestRedact: every registered secret is masked, the longest first; short
// values are never secrets.
func TestRedact(t *testing.T) {
	Register("pw-abc")
	Register("pw-abcdef")
	Register("ab")
	tests := []struct{ in, want string }{
		{"AUTH lt pw-abc", "AUTH lt " + Mask},
		{"pw-abcdef and pw-abc", Mask + " and " + Mask},
		{"ab stays", "ab stays"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var b bytes.Buffer
	n, err := Writer(&b).Write([]byte("line with pw-abc\n"))
	if err != nil || n != len("line with pw-abc\n") || b.String() != "line with "+Mask+"\n" {
		t.Errorf("Writer wrote %q (%d, %v)", b.String(), n, err)
	}
}
