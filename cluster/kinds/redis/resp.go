package redis

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// redisCall sends one command to a Redis or Sentinel server over a fresh
// connection — TLS and AUTH first when e's credentials ask — and returns
// its reply: a string, an int64, nil, or a []any. It is for the harness's
// own control traffic (never a lock client's). A refused AUTH is an error
// reading "WRONGPASS ..." (the server's words, never the password).
func redisCall(ctx context.Context, e cluster.Endpoint, args ...string) (any, error) {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", e.Addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	cfg, err := e.Auth.TLSConfig(e.Addr)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		conn = tc
	}
	r := bufio.NewReader(conn)
	if a := e.Auth; a != nil && a.Password != "" {
		auth := []string{"AUTH", a.Password}
		if a.Username != "" {
			auth = []string{"AUTH", a.Username, a.Password}
		}
		if _, err := conn.Write(respCommand(auth)); err != nil {
			return nil, err
		}
		if _, err := readReply(r); err != nil {
			return nil, err
		}
	}
	if _, err := conn.Write(respCommand(args)); err != nil {
		return nil, err
	}
	return readReply(r)
}

// respCommand is args as a RESP array of bulk strings.
func respCommand(args []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return []byte(b.String())
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, fmt.Errorf("empty reply")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, errors.New(line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("bad reply %q", line)
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
