package local

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePort: the port is bindable and, where the kernel's ephemeral
// range leaves room below it, outside that range (no outgoing connection
// can take it as its source port meanwhile).
func TestFreePort(t *testing.T) {
	lo := ephemeralLow()
	for range 20 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if lo > freePortFloor+1000 && (p < freePortFloor || p >= lo) {
			t.Errorf("port %d: want it in [%d, %d), below the ephemeral range", p, freePortFloor, lo)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		_ = l.Close()
	}
}
