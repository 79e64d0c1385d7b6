package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"sort"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locktorture/locktorture/cluster"
)

// KillSessions ends the session of every lock's holder: the owner of the
// oldest ephemeral znode under each parent (the lock recipe's first
// waiter is the holder), whatever clients are named, as with etcd.
//
// ZooKeeper has no command that ends another client's session, but a
// session's password is derived from its id alone (ZooKeeperServer's
// generatePasswd: java.util.Random seeded with the id xor 0xB3415C00), so
// the harness reattaches to the holder's session with its id and
// password, as the holder's own client would after a reconnect, and
// closes it: the server ends the session, deletes its ephemeral lock
// node, and the holder hears that its session expired.
func (z *ZooKeeper) KillSessions(ctx context.Context, clients []int) ([]map[string]any, error) {
	var addrs []string
	for _, m := range z.Members() {
		addrs = append(addrs, m.Addr())
	}
	if len(addrs) == 0 {
		return nil, errors.New("zookeeper: no member")
	}
	holders, err := zkHolders(ctx, addrs, z.Auth())
	if err != nil {
		return nil, fmt.Errorf("zookeeper: find the lock holders: %w", err)
	}
	var out []map[string]any
	for _, h := range holders {
		// The holder's client, its connection dropped by the reattach,
		// may reattach first and drop this one: try again.
		var lastErr error
	tries:
		for range 3 {
			for _, a := range addrs {
				if lastErr = zkCloseSession(ctx, a, h.owner); lastErr == nil {
					break tries
				}
			}
		}
		if lastErr != nil {
			return out, fmt.Errorf("zookeeper: close session 0x%x of %s: %w", h.owner, h.node, lastErr)
		}
		out = append(out, map[string]any{"node": h.node, "session": fmt.Sprintf("0x%x", h.owner), "closed": true})
	}
	return out, nil
}

// zkHolder is the oldest ephemeral znode under one parent and its session.
type zkHolder struct {
	node  string
	owner int64
	czxid int64
}

// zkHolders walks the tree (outside /zookeeper, four levels deep: the
// lock recipe's root, key, lock node — tooz's recipe has a root of two,
// /tooz/locks) and returns, per parent, its oldest
// ephemeral child, sorted by path; subtrees the run's user may not list
// (someone else's) are skipped.
func zkHolders(ctx context.Context, addrs []string, auth *cluster.Auth) ([]zkHolder, error) {
	conn, events, err := zk.Connect(addrs, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	for conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-events:
		}
	}
	if err := AddAuth(conn, auth); err != nil {
		return nil, err
	}
	oldest := map[string]zkHolder{}
	var walk func(p string, depth int) error
	walk = func(p string, depth int) error {
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNoAuth) {
			return nil // gone, or someone else's
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			child := path.Join(p, k)
			if child == "/zookeeper" {
				continue
			}
			st, err := zkStat(conn, child)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			if st.EphemeralOwner != 0 {
				if h, ok := oldest[p]; !ok || st.Czxid < h.czxid {
					oldest[p] = zkHolder{node: child, owner: st.EphemeralOwner, czxid: st.Czxid}
				}
			}
			if depth < 4 && st.NumChildren > 0 {
				if err := walk(child, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("/", 1); err != nil {
		return nil, err
	}
	out := make([]zkHolder, 0, len(oldest))
	for _, h := range oldest {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node < out[j].node })
	return out, nil
}

// zkStat is the stat of p (Exists needs no read permission).
func zkStat(conn *zk.Conn, p string) (*zk.Stat, error) {
	ok, st, err := conn.Exists(p)
	if err == nil && !ok {
		err = zk.ErrNoNode
	}
	return st, err
}

// zkSessionPassword is the password ZooKeeper gives session id:
// java.util.Random(id ^ 0xB3415C00).nextBytes(new byte[16]).
func zkSessionPassword(id int64) []byte {
	const mult, mask = 0x5DEECE66D, (1 << 48) - 1
	seed := (uint64(id^0xB3415C00) ^ mult) & mask
	p := make([]byte, 16)
	for i := 0; i < len(p); {
		seed = (seed*mult + 0xB) & mask
		rnd := int32(seed >> 16) // next(32)
		for n := min(len(p)-i, 4); n > 0; n-- {
			p[i] = byte(rnd)
			rnd >>= 8
			i++
		}
	}
	return p
}

// zkCloseSession reattaches to session id at addr with its password and
// closes it, waiting for the server's reply to the close.
func zkCloseSession(ctx context.Context, addr string, id int64) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	req := zkConnectRequest(id, zkSessionPassword(id))
	if _, err := c.Write(req); err != nil {
		return err
	}
	// ConnectResponse: protocolVersion, timeOut, sessionId, passwd,
	// readOnly. A timeOut of 0 means the session is gone or the password
	// was refused.
	resp, err := zkReadFrame(c)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if len(resp) < 16 {
		return fmt.Errorf("connect: short response (%d bytes)", len(resp))
	}
	if binary.BigEndian.Uint32(resp[4:8]) == 0 || int64(binary.BigEndian.Uint64(resp[8:16])) != id {
		return errors.New("the server refused to reattach to the session (expired, or the password was not its)")
	}
	// CloseSession: xid 1, type -11; the reply header: xid, zxid, err.
	if _, err := c.Write(zkCloseRequest()); err != nil {
		return err
	}
	for {
		r, err := zkReadFrame(c)
		if err != nil {
			return fmt.Errorf("close: %w", err)
		}
		if len(r) >= 16 && binary.BigEndian.Uint32(r[0:4]) == 1 {
			if code := int32(binary.BigEndian.Uint32(r[12:16])); code != 0 {
				return fmt.Errorf("close: ZooKeeper error %s", strconv.Itoa(int(code)))
			}
			return nil
		}
	}
}

// zkReadFrame reads one length-prefixed ZooKeeper frame.
func zkReadFrame(c net.Conn) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, err
	}
	return b, nil
}
