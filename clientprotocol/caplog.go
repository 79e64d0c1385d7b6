package clientprotocol

import (
	"fmt"
	"io"
	"os"

	"github.com/locktorture/locktorture/internal/secret"
)

// logCap is the most a client's log (client-N.log, its stderr) keeps: its
// first logCap/2 bytes, then a line saying how much was cut, then its last
// logCap/2 bytes.
const logCap = 16 << 20

// capLog copies a child's stderr into its log file, keeping the head and
// the tail when there is more than cap bytes.
type capLog struct {
	f    *os.File
	cap  int64
	n    int64  // bytes written to f (the head)
	tail []byte // a ring of the last cap/2 bytes past the head
	pos  int    // next write position in tail, once it is full
	full bool
	seen int64 // every byte the child wrote
}

func newCapLog(f *os.File, limit int64) *capLog {
	return &capLog{f: f, cap: limit}
}

// Write keeps p in the head while there is room, in the tail after.
func (c *capLog) Write(p []byte) (int, error) {
	total := len(p)
	c.seen += int64(total)
	if room := c.cap/2 - c.n; room > 0 {
		k := min(int64(len(p)), room)
		if _, err := c.f.Write(p[:k]); err != nil {
			return 0, err
		}
		c.n += k
		p = p[k:]
	}
	half := int(c.cap / 2)
	for len(p) > 0 {
		if !c.full {
			k := min(len(p), half-len(c.tail))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			if len(c.tail) == half {
				c.full = true
			}
			continue
		}
		k := copy(c.tail[c.pos:], p)
		c.pos = (c.pos + k) % half
		p = p[k:]
	}
	return total, nil
}

// Cut is how many bytes the log left out (0: it holds everything).
func (c *capLog) Cut() int64 { return c.seen - c.n - int64(len(c.tail)) }

// finish writes the tail (after a line saying what was cut, if anything
// was) and closes the file.
func (c *capLog) finish() error {
	if cut := c.Cut(); cut > 0 {
		fmt.Fprintf(c.f, "\n[locktorture: %d bytes cut here: a client log keeps its first and last %d MiB]\n", cut, c.cap/2>>20)
	}
	var err error
	if c.full {
		_, err = c.f.Write(c.tail[c.pos:])
		if err == nil {
			_, err = c.f.Write(c.tail[:c.pos])
		}
	} else {
		_, err = c.f.Write(c.tail)
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = redactFile(c.f.Name())
	}
	return err
}

// redactFile masks every secret the run knows (the passwords it gave the
// client in its open request: its own servers' and the servers file's) in
// the log at path, once it is whole: a client that logs its open request
// or its connection string writes no secret into the store. The whole
// file at once, so a secret split between two writes is masked too.
func redactFile(path string) error {
	if !secret.Any() {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if r := secret.Redact(string(b)); r != string(b) {
		return os.WriteFile(path, []byte(r), 0o644)
	}
	return nil
}

var _ io.Writer = (*capLog)(nil)
