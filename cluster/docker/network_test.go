package docker

import (
	"net/netip"
	"testing"
)

func TestOverlaps(t *testing.T) {
	taken := []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16"), netip.MustParsePrefix("172.17.0.0/16")}
	tests := []struct {
		p    string
		want bool
	}{
		{"10.200.7.0/24", true},
		{"10.201.7.0/24", false},
		{"10.0.0.0/8", true},
		{"172.17.255.0/24", true},
		{"192.168.1.0/24", false},
	}
	for _, tc := range tests {
		if got := overlaps(netip.MustParsePrefix(tc.p), taken); got != tc.want {
			t.Errorf("overlaps(%s) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

// TestRoutedPrefixes reads this machine's routes: whatever they are, none
// is the default route, and each is a masked prefix.
func TestRoutedPrefixes(t *testing.T) {
	for _, p := range routedPrefixes() {
		if p.Bits() == 0 || p != p.Masked() {
			t.Errorf("route %s: the default route, or not masked", p)
		}
	}
}
