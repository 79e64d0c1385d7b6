package history

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// splitMin is the smallest history readFile parses in two halves, each on
// its own core (a variable for tests). Below it, the second goroutine and
// the second count cost more than they save.
var splitMin int64 = 4 << 20

// readSplit reads the history in r (size bytes) as readAll does — the same
// ops, the same error naming the same line — but in two halves parsed side
// by side: the first ends at the newline at or after mid, the second holds
// the rest. Each half is first counted (its lines), so that both decode
// straight into one slice, the second half at the first half's line count;
// when the first half had blank lines, the second half's ops move down to
// close the gap. An error in the first half wins over one in the second,
// as it would reading line by line; line numbers in the second half go on
// from the first's. ok is false when r has no newline at or after mid with
// bytes after it, when r cannot be read, or when a half turns out longer
// than counted (a file being written): read it in one piece then.
func readSplit(r io.ReaderAt, size, mid int64, contract bool) (ops []Op, ok bool, err error) {
	cut, err := lineEnd(r, size, mid)
	if err != nil || cut <= 0 || cut >= size {
		return nil, false, nil
	}
	var (
		wg             sync.WaitGroup
		lines1, lines2 int
		err1, err2     error
	)
	wg.Go(func() { lines1, err1 = countSection(r, 0, cut) })
	lines2, err2 = countSection(r, cut, size-cut)
	wg.Wait()
	if err1 != nil || err2 != nil {
		return nil, false, nil // readAll meets the error again and names it
	}
	ops = make([]Op, lines1+lines2)
	adviseHugePages(ops)
	var n1, n2, line2 int
	wg.Go(func() { n1, _, err1 = readSection(r, 0, cut, 0, ops[:lines1], contract) })
	n2, line2, err2 = readSection(r, cut, size-cut, lines1, ops[lines1:], contract)
	wg.Wait()
	if err1 == errMoreLines || err2 == errMoreLines {
		return nil, false, nil
	}
	if contract && err1 == nil && n1 > 0 && n2 > 0 && ops[lines1].Time < ops[n1-1].Time {
		// Time went backwards where the halves meet: the second half's
		// first op is where one reader stops.
		err1 = backwards(line2, ops[lines1].Time, ops[n1-1].Time)
		clear(ops[n1:])
		return ops[:n1:n1], true, err1
	}
	n := n1
	if err1 == nil {
		if n1 < lines1 {
			copy(ops[n1:], ops[lines1:lines1+n2])
			clear(ops[n1+n2 : lines1+n2])
		}
		n, err1 = n1+n2, err2
	}
	if n == 0 {
		return nil, true, err1 // as readAll
	}
	return ops[:n:n], true, err1
}

// lineEnd returns the offset just after the first newline at or after mid,
// or size when there is none.
func lineEnd(r io.ReaderAt, size, mid int64) (int64, error) {
	buf := make([]byte, min(64<<10, max(size-mid, 1)))
	for off := mid; off < size; {
		m, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if i := bytes.IndexByte(buf[:m], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		off += int64(m)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if m == 0 {
			break
		}
	}
	return size, nil
}

// countSection counts the lines of r's n bytes from off: its newlines, and
// one more when the last byte is not one.
func countSection(r io.ReaderAt, off, n int64) (int, error) {
	buf := make([]byte, min(256<<10, max(n, 1)))
	lines, last := 0, byte('\n')
	for end := off + n; off < end; {
		m, err := r.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if m > 0 {
			lines += bytes.Count(buf[:m], []byte{'\n'})
			last = buf[m-1]
		}
		off += int64(m)
		if err != nil && !(errors.Is(err, io.EOF) && off == end) {
			return 0, err
		}
	}
	if last != '\n' {
		lines++
	}
	return lines, nil
}

// errMoreLines reports a section with more lines than its count (a file
// written while it was read).
var errMoreLines = errors.New("history: more lines than counted")

// readSection decodes the ops of r's n bytes from off, whose first line is
// line line+1 of the history, into out (which has room for every line) and
// returns how many it decoded and the line of the first, stopping at the
// first error as readAll does. (Time going backwards from the op before
// the section is the caller's to see: the section's reader starts afresh.)
func readSection(r io.ReaderAt, off, n int64, line int, out []Op, contract bool) (done, first int, err error) {
	rd := newReaderSize(io.NewSectionReader(r, off, n), int(min(readerBuffer, n+1)))
	rd.Contract, rd.line = contract, line
	for {
		if done == len(out) {
			// Every line held an op: only the end (or a read error) is left.
			var op Op
			if _, err := rd.next(&op); err != io.EOF {
				return done, first, errMoreLines
			}
			return done, first, nil
		}
		if _, err := rd.next(&out[done]); err != nil {
			if err == io.EOF {
				return done, first, nil
			}
			return done, first, err
		}
		if done == 0 {
			first = rd.line
		}
		done++
	}
}
