package tcpdelay

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string, deadline time.Duration) (string, error) {
	t.Helper()
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(deadline))
	line, err := r.ReadString('\n')
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		return "", err
	}
	return line[:len(line)-1], nil
}

func TestForwardDelayPause(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(t, c, r, "a", 10*time.Second); err != nil || got != "a" {
		t.Fatalf("plain forward: %q, %v", got, err)
	}

	// A held reply arrives no sooner than its delay.
	const hold = 150 * time.Millisecond
	p.SetDelay(Down, hold)
	start := time.Now()
	if got, err := roundTrip(t, c, r, "b", 10*time.Second); err != nil || got != "b" {
		t.Fatalf("delayed forward: %q, %v", got, err)
	}
	if took := time.Since(start); took < hold {
		t.Errorf("reply came after %s, before its %s delay", took, hold)
	}
	p.SetDelay(Down, 0)

	// DelayNext holds one chunk only: the request after it is not held
	// behind a delay of its own (but waits for the held one, in order).
	p.DelayNext(Up, hold)
	start = time.Now()
	if got, err := roundTrip(t, c, r, "c", 10*time.Second); err != nil || got != "c" {
		t.Fatalf("one-shot delay: %q, %v", got, err)
	}
	if took := time.Since(start); took < hold {
		t.Errorf("held request answered after %s, before its %s delay", took, hold)
	}

	// Paused, nothing gets through; resumed, the queued bytes do.
	p.Pause()
	if _, err := roundTrip(t, c, r, "d", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("a paused proxy forwarded (err %v)", err)
	}
	p.Resume()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "d\n" {
		t.Fatalf("after resume: %q, %v", line, err)
	}
}

func TestCloseDropsConnections(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := roundTrip(t, c, r, "x", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Pause() // Close must not hang on a paused or delayed chunk
	_, _ = c.Write([]byte("y\n"))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || isTimeout(err) {
		t.Errorf("connection still open after Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Errorf("still listening after Close")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
