package zookeeper

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/locktorture/locktorture/cluster"
)

// TestFourLetterNotServingLeftOpen: a ZooKeeper 3.8 asked `srvr` while it
// starts may send its not-serving reply and then leave the connection
// open (it fails to close it: a NullPointerException in its log); the
// member reads that reply as the whole answer, not waiting for a close
// that never comes, and is not serving. The listener replays those bytes,
// as a real ZooKeeper sent them (4 of 12 standalone starts), and holds the
// connection until the test ends.
func TestFourLetterNotServingLeftOpen(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		cmd := make([]byte, 4)
		if _, err := io.ReadFull(conn, cmd); err != nil {
			return
		}
		_, _ = conn.Write([]byte(notServing))
		<-done // never closed while the member reads
	}()
	m := newZooKeeperMember(cluster.NewFaultable(Kind, "zookeeper-0"), 1)
	m.SetAddr("127.0.0.1", l.Addr().(*net.TCPAddr).Port)
	got, err := m.fourLetter(context.Background(), "srvr")
	if err != nil || got != notServing {
		t.Fatalf("srvr: %q, %v; want the not-serving reply, no error", got, err)
	}
	if _, ok := srvrField(got, "Mode"); ok {
		t.Fatalf("a not-serving reply names a mode: %q", got)
	}
}
