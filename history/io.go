package history

import (
	"github.com/locktorture/locktorture/internal/secret"

	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Sentinel errors of this package.
var (
	// ErrTruncated is reported (wrapped) when the last line of a history is
	// cut off, as when the harness was killed while writing it.
	ErrTruncated = errors.New("history: last line is incomplete")
	// ErrClosed is returned by a Recorder used after Close.
	ErrClosed = errors.New("history: recorder is closed")
	// ErrLineTooLong is reported (wrapped, naming the line) for a line of
	// more than MaxLineBytes bytes.
	ErrLineTooLong = fmt.Errorf("longer than %d MiB, the most a history's line may be", MaxLineBytes>>20)
)

// MaxLineBytes is the longest line a history may have, its newline not
// counted. The harness writes nothing near it (a client process's reply,
// whose error a line may carry, is at most 1 MiB); a longer line is
// refused (ErrLineTooLong) as soon as its first MaxLineBytes+1 bytes are
// read, so a line with no end (/dev/zero) costs no more than the cap.
const MaxLineBytes = 16 << 20

// recordBuffer is the size of a Recorder's buffer: a write of it costs
// about a fifth less CPU a byte than one of 64 KiB (measured on the 2-core
// machine: 0.17-0.19 ns a byte against 0.21-0.27), and every op is written
// by a client on its way to its next request. The flusher still writes
// whatever is buffered every FlushEvery.
const recordBuffer = 256 << 10

// Recorder stamps ops with the run's one monotonic clock and the next index,
// and streams them to a writer. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	start time.Time
	// skip is how long after start time 0 is (StartNow).
	skip    atomic.Int64
	next    int64
	w       *bufio.Writer
	f       *os.File // nil when not writing to a file
	ops     [][]Op   // kept in memory when keep is set and w is nil, in blocks (see keepOp)
	lines   kept     // kept in memory when keep is set and w is not nil
	keep    bool
	err     error
	closed  bool
	stop    chan struct{}
	done    chan struct{}
	observe atomic.Pointer[func(Op)]
}

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// Keep holds every op in memory as well, for History().
	Keep bool
	// Observe, when set, is called with every op right after it is
	// recorded, on the recording goroutine (a nemesis uses it to act on a
	// client's events before the client's next step).
	Observe func(Op)
	// FlushEvery flushes the buffer to the file at this period (default 100ms),
	// so a killed harness still leaves most of its history behind.
	FlushEvery time.Duration
}

// NewRecorder returns a recorder writing JSONL to w (which may be nil to
// record only in memory). If w is an *os.File, Close syncs it.
func NewRecorder(w io.Writer, opt RecorderOptions) *Recorder {
	r := &Recorder{start: time.Now(), keep: opt.Keep || w == nil}
	r.SetObserver(opt.Observe)
	if w != nil {
		r.w = bufio.NewWriterSize(w, recordBuffer)
		if f, ok := w.(*os.File); ok {
			r.f = f
		}
		every := opt.FlushEvery
		if every <= 0 {
			every = 100 * time.Millisecond
		}
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.flusher(every)
	}
	return r
}

func (r *Recorder) flusher(every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			if r.err == nil && !r.closed {
				r.err = r.w.Flush()
			}
			r.mu.Unlock()
		}
	}
}

// Now returns nanoseconds since the recorder started (or since StartNow),
// on its monotonic clock.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) - r.skip.Load() }

// StartNow makes this instant time 0, when nothing has been recorded yet
// (a run's time starts when its clients are ready, not when its recorder
// was made); it reports whether it did.
func (r *Recorder) StartNow() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next > 0 {
		return false
	}
	r.skip.Store(int64(time.Since(r.start)))
	return true
}

// Record stamps op with the next index and the current time and writes it.
// It returns the stamped op.
func (r *Recorder) Record(op Op) (Op, error) {
	err := r.recordOp(&op)
	return op, err
}

// recordOp is Record stamping op in place: the op is not copied from one
// call to the next (it is over a hundred bytes, and every client's every
// op comes this way).
func (r *Recorder) recordOp(op *Op) error {
	r.mu.Lock()
	err := r.recordLocked(op, -1)
	r.mu.Unlock()
	if f := r.observe.Load(); err == nil && f != nil && *f != nil {
		(*f)(*op)
	}
	return err
}

// recordPair records an invoke and its completion one after the other,
// stamped with one time: an instant op such as lost.
func (r *Recorder) recordPair(inv, done Op) (Op, error) {
	r.mu.Lock()
	err := r.recordLocked(&inv, -1)
	if err == nil {
		err = r.recordLocked(&done, inv.Time)
	}
	r.mu.Unlock()
	if f := r.observe.Load(); err == nil && f != nil && *f != nil {
		(*f)(inv)
		(*f)(done)
	}
	return done, err
}

// SetObserver replaces the function told of every op (see
// RecorderOptions.Observe); nil removes it.
func (r *Recorder) SetObserver(f func(Op)) { r.observe.Store(&f) }

// recordLocked stamps op (at time at, or now when at < 0) and writes it;
// r.mu is held.
func (r *Recorder) recordLocked(op *Op, at int64) error {
	if r.closed {
		return ErrClosed
	}
	op.Index = r.next
	op.Time = r.Now()
	// A client's error may quote what a server said back: never a secret.
	// (Redact of no error is no error: most ops have none.)
	if op.Error != "" {
		op.Error = secret.Redact(op.Error)
	}
	if at >= 0 {
		op.Time = at
	}
	r.next++
	switch {
	case r.w == nil:
		r.keepOp(*op)
		return r.err
	case r.err != nil:
		if r.keep {
			r.lines.addOp(*op)
		}
		return r.err
	}
	b, err := appendOp(r.w.AvailableBuffer(), op)
	if err != nil {
		r.err = fmt.Errorf("encode op %d: %w", op.Index, err)
		if r.keep {
			r.lines.addOp(*op)
		}
		return r.err
	}
	b = append(b, '\n')
	if r.keep {
		r.lines.addLine(b)
	}
	if _, err := r.w.Write(b); err != nil {
		r.err = fmt.Errorf("write op %d: %w", op.Index, err)
	}
	return r.err
}

// keepBlock is how many ops one block of a Recorder's memory holds.
const keepBlock = 4096

// keepOp keeps op in memory, for a Recorder that writes nowhere (one that
// writes keeps its lines instead: see kept). Ops go into fixed blocks
// rather than one growing slice: growing copied the whole history under
// the recorder's lock, stalling every client while it did.
func (r *Recorder) keepOp(op Op) {
	if len(r.ops) == 0 || len(r.ops[len(r.ops)-1]) == keepBlock {
		r.ops = append(r.ops, make([]Op, 0, keepBlock))
	}
	last := &r.ops[len(r.ops)-1]
	*last = append(*last, op)
}

// Proc records the ops of one client process and keeps the history's rule
// that a process has at most one op outstanding. The process's own ops
// (Invoke, Instant) come one at a time, each waiting for the one before.
// An op its lock runs in the background — a watchdog's or an adapter's
// extend, recorded with InvokeBackground — is one of the process's ops
// too, but it never holds the process's own work back: when the process
// goes on (its next Invoke or Instant) while a background op is still
// open, that op is completed then as info (its outcome unknown: a lease it
// renewed is not counted) and its completion, when it comes, is not
// recorded (BackgroundOp.Complete returns ErrSuperseded).
type Proc struct {
	r  *Recorder
	id int

	mu   sync.Mutex
	busy bool          // an op is outstanding
	bg   *BackgroundOp // that op, when it is a background one
	// free is closed when the outstanding op completes; it is made by
	// the first goroutine that waits for it (wait), nil while none does:
	// a process's own ops come one at a time and nearly never wait, and
	// a channel made and closed for every op cost each op two of the
	// harness's allocations.
	free chan struct{}
}

// wait returns the channel closed when the outstanding op completes,
// making it if no one waits yet; p.mu is held.
func (p *Proc) wait() chan struct{} {
	if p.free == nil {
		p.free = make(chan struct{})
	}
	return p.free
}

// done marks the outstanding op complete and lets its waiters go; p.mu
// is held.
func (p *Proc) done() {
	p.busy, p.bg = false, nil
	if p.free != nil {
		close(p.free)
		p.free = nil
	}
}

// ErrSuperseded is returned (wrapped) by BackgroundOp.Complete when the
// process went on before the op completed: the history has it as info
// from that moment, and this completion is not recorded.
var ErrSuperseded = errors.New("history: the process went on before this completion, which is not recorded")

// BackgroundOp is an op its process's lock runs in the background (an
// extend), open from InvokeBackground until Complete or until the process
// goes on (see Proc).
type BackgroundOp struct {
	p       *Proc
	invoked Op
	// set under p.mu when the process went on first
	superseded bool
	by         string // the f of the process's op that went on
	at         int64  // when: the time of the info completion
}

// Proc returns the recorder of client process id. Call it once per process
// and share the result among the process's goroutines.
func (r *Recorder) Proc(id int) *Proc {
	return &Proc{r: r, id: id}
}

// SupersededError is the info completion's error of a background op still
// open when its process went on to an op f.
func SupersededError(f string) string {
	return fmt.Sprintf("still open when the holder went on to its %s: outcome unknown (a completion after this is not recorded)", f)
}

// take makes the process's op f the outstanding one, first waiting (or
// until ctx ends) for an outstanding op of the process's own; a background
// op still open is completed now as info instead (see Proc).
func (p *Proc) take(ctx context.Context, f string) error {
	for {
		p.mu.Lock()
		if !p.busy {
			p.busy = true
			p.mu.Unlock()
			return nil
		}
		if b := p.bg; b != nil {
			// The process goes on: the background op ends here, unknown.
			done := Op{Process: p.id, Type: Info, F: b.invoked.F, Key: b.invoked.Key, Error: SupersededError(f)}
			rec, err := p.r.Record(done)
			b.superseded, b.by, b.at = true, f, rec.Time
			p.bg = nil // the slot stays taken: it is the process's op's now
			p.mu.Unlock()
			if err != nil {
				p.give()
			}
			return err
		}
		ch := p.wait()
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// give frees the process's slot.
func (p *Proc) give() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy {
		p.done()
	}
}

// Invoke records op as the process's invocation, first waiting (or until
// ctx ends) for its own outstanding op to complete; a background op still
// open is completed as info first (see Proc). Every successful Invoke
// must be followed by one Complete.
func (p *Proc) Invoke(ctx context.Context, op Op) (Op, error) {
	if err := p.take(ctx, op.F); err != nil {
		return op, err
	}
	op.Process, op.Type = p.id, Invoke
	err := p.r.recordOp(&op)
	if err != nil {
		p.give()
	}
	return op, err
}

// Complete records op (ok, fail or info) as the completion of the
// process's outstanding invocation.
func (p *Proc) Complete(op Op) (Op, error) {
	op.Process = p.id
	if op.Type == Invoke || op.Type == "" {
		op.Type = Info
	}
	err := p.r.recordOp(&op)
	p.mu.Lock()
	if p.busy && p.bg == nil {
		p.done()
	}
	p.mu.Unlock()
	return op, err
}

// Instant records op as an invoke immediately followed by its ok at the
// same time (a lost op), first waiting (or until ctx ends) for the
// process's outstanding op to complete, as Invoke does. It returns the ok.
func (p *Proc) Instant(ctx context.Context, op Op) (Op, error) {
	if err := p.take(ctx, op.F); err != nil {
		return op, err
	}
	defer p.give()
	op.Process = p.id
	inv, done := op, op
	inv.Type, done.Type = Invoke, OK
	return p.r.recordPair(inv, done)
}

// InvokeBackground records op as the invocation of an op the process's
// lock runs in the background (an extend), once no other op of the
// process is outstanding (waiting until then, or until ctx ends). The
// returned op must be completed by its Complete; the process's own next
// op may end it first (see Proc).
func (p *Proc) InvokeBackground(ctx context.Context, op Op) (*BackgroundOp, error) {
	for {
		p.mu.Lock()
		if !p.busy {
			break
		}
		ch := p.wait()
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer p.mu.Unlock()
	op.Process, op.Type = p.id, Invoke
	// Recorded with p.mu held: the process's next op cannot end it before
	// its invoke is in the history.
	rec, err := p.r.Record(op)
	if err != nil {
		return nil, err
	}
	b := &BackgroundOp{p: p, invoked: rec}
	p.busy, p.bg = true, b
	return b, nil
}

// Invoked is the op's invocation as recorded.
func (b *BackgroundOp) Invoked() Op { return b.invoked }

// Superseded reports whether the process went on while the op was open:
// the f of the op it went on to, and the time of the op's info completion.
func (b *BackgroundOp) Superseded() (by string, at int64, ok bool) {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	return b.by, b.at, b.superseded
}

// Complete records op (ok, fail or info) as the completion of b — unless
// the process went on first: then nothing is recorded, and the error
// wraps ErrSuperseded (the returned op is op stamped with the time it
// came, for the caller's log).
func (b *BackgroundOp) Complete(op Op) (Op, error) {
	p := b.p
	op.Process = p.id
	if op.Type == Invoke || op.Type == "" {
		op.Type = Info
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.superseded {
		op.Time = p.r.Now()
		return op, fmt.Errorf("%w (its %s began at %s)", ErrSuperseded, b.by, time.Duration(b.at))
	}
	if p.bg != b {
		// Completed already: a second completion is not recorded either.
		op.Time = p.r.Now()
		return op, fmt.Errorf("%w (it was completed already)", ErrSuperseded)
	}
	done, err := p.r.Record(op)
	p.done()
	return done, err
}

// Len returns the number of ops recorded so far.
func (r *Recorder) Len() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

// History returns a copy of the ops recorded so far (only when kept in
// memory). A Recorder that writes a history keeps each op as the line it
// wrote and decodes them here: the ops are those of the file, as
// ReadAll would read it back.
func (r *Recorder) History() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		return r.lines.history()
	}
	n := 0
	for _, b := range r.ops {
		n += len(b)
	}
	out := make([]Op, 0, n)
	for _, b := range r.ops {
		out = append(out, b...)
	}
	return out
}

// Close flushes and syncs the history. The underlying file is not closed.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return r.err
	}
	r.closed = true
	r.mu.Unlock()
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil && r.err == nil {
		r.err = r.w.Flush()
		if r.err == nil && r.f != nil {
			r.err = r.f.Sync()
		}
	}
	return r.err
}

// WriteAll writes ops as JSONL to w, unchanged (indexes and times as given).
func WriteAll(w io.Writer, ops []Op) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	for i := range ops {
		b, err := appendOp(bw.AvailableBuffer(), &ops[i])
		if err != nil {
			return fmt.Errorf("write op %d: %w", i, err)
		}
		if _, err := bw.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("write op %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// Reader reads a JSONL history one op at a time.
type Reader struct {
	// Contract makes the reader refuse, naming the line, an op that breaks
	// a rule of the history contract no checker can work around: a
	// required field missing, or one of conform's rules.
	Contract bool

	br   *bufio.Reader
	line int
	long []byte // a line longer than br's buffer, gathered
	dec  decoder
	// last is the time of the last op read to the contract, once timed
	// is set: the next may not be earlier.
	last  int64
	timed bool
}

// readerBuffer is the size of a Reader's buffer.
const readerBuffer = 256 << 10

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader { return newReaderSize(r, readerBuffer) }

// newReaderSize returns a Reader over r with a buffer of size bytes.
func newReaderSize(r io.Reader, size int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, size), dec: newDecoder()}
}

// Next returns the next op. At the end it returns io.EOF. If the last line
// has no newline and does not parse (the writer was killed mid-line), it
// returns an error wrapping ErrTruncated. Any other bad line is an error
// naming its line number.
func (r *Reader) Next() (Op, error) {
	var op Op
	_, err := r.next(&op)
	return op, err
}

// nextFields is Next, and also says which fields the op's line had (see
// decodeOp).
func (r *Reader) nextFields() (Op, fieldSet, error) {
	var op Op
	fields, err := r.next(&op)
	return op, fields, err
}

// next decodes the next op into *op; see Next.
func (r *Reader) next(op *Op) (fieldSet, error) {
	for {
		b, err := r.readLine()
		if err == ErrLineTooLong {
			return 0, fmt.Errorf("history: line %d: %w", r.line+1, err)
		}
		if len(b) == 0 && err != nil {
			if err == io.EOF {
				return 0, io.EOF
			}
			return 0, fmt.Errorf("history: read line %d: %w", r.line+1, err)
		}
		r.line++
		complete := err == nil
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if !complete {
				return 0, io.EOF
			}
			continue
		}
		fields, derr := r.dec.decode(b, op)
		if derr != nil {
			*op = Op{}
			if !complete {
				return 0, fmt.Errorf("line %d: %w", r.line, ErrTruncated)
			}
			return 0, fmt.Errorf("history: line %d: %w", r.line, derr)
		}
		if cerr := conformsLine(op, fields); r.Contract && cerr != nil {
			*op = Op{}
			return 0, fmt.Errorf("history: line %d: %w", r.line, cerr)
		}
		if r.Contract {
			if r.timed && op.Time < r.last {
				err := backwards(r.line, op.Time, r.last)
				*op = Op{}
				return 0, err
			}
			r.last, r.timed = op.Time, true
		}
		return fields, nil
	}
}

// required are the fields every op of the contract has.
var required = []struct {
	f    fieldSet
	name string
}{{fieldIndex, "index"}, {fieldTime, "time"}, {fieldProcess, "process"}, {fieldType, "type"}, {fieldF, "f"}}

// conformsLine checks a decoded op against the rules of the contract no checker
// can work around: every required field present (a missing "time" is not
// time 0), and conform's rules.
func conformsLine(op *Op, fields fieldSet) error {
	for _, r := range required {
		if !fields.Has(r.f) {
			return fmt.Errorf("%w: no %q", errContract, r.name)
		}
	}
	return conform(op)
}

// backwards is the error of the op on line whose time t is before the
// time prev of the op before it: time never goes backwards (one clock
// stamps every op, in the order they happened), and the checkers would
// misjudge such a history (an ok stamped before its own invoke makes an
// uncontested acquire look not linearizable).
func backwards(line int, t, prev int64) error {
	return fmt.Errorf("history: line %d: %w: time goes backwards (%d after %d): one clock stamps every op, in the order they happened", line, errContract, t, prev)
}

// readLine returns the next line with its newline, as
// bufio.Reader.ReadBytes does, but in the reader's buffer: it is good
// until the next call. A line of more than MaxLineBytes bytes (its
// newline not counted) is ErrLineTooLong, found before more than
// MaxLineBytes+1 of it is held.
func (r *Reader) readLine() ([]byte, error) {
	b, err := r.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return b, lineLength(b, err)
	}
	r.long = append(r.long[:0], b...)
	for err == bufio.ErrBufferFull && len(r.long) <= MaxLineBytes {
		b, err = r.br.ReadSlice('\n')
		if len(r.long)+len(b) > cap(r.long) {
			// Double it (append grows a large slice by a quarter,
			// copying a long line over and over).
			grown := make([]byte, len(r.long), 2*cap(r.long)+len(b))
			copy(grown, r.long)
			r.long = grown
		}
		r.long = append(r.long, b...)
	}
	return r.long, lineLength(r.long, err)
}

// lineLength returns err, or ErrLineTooLong when line (read up to its
// newline, or as far as the cap) is longer than MaxLineBytes.
func lineLength(line []byte, err error) error {
	n := len(line)
	if err == nil {
		n-- // the newline
	}
	if n > MaxLineBytes {
		return ErrLineTooLong
	}
	return err
}

// lineNumber returns the number of lines read so far.
func (r *Reader) lineNumber() int { return r.line }

// ReadAll reads a whole history. When the last line is cut off, it returns
// every complete op together with an error wrapping ErrTruncated; callers
// that can check a partial history test for it with errors.Is. When r can
// seek (a file, a bytes.Reader), ReadAll first counts its lines, to size
// the result at once, and then seeks back.
func ReadAll(r io.Reader) ([]Op, error) { return readAll(r, false) }

func readAll(r io.Reader, contract bool) ([]Op, error) {
	var ops []Op
	if s, ok := r.(io.ReadSeeker); ok {
		n, err := countLines(s)
		if err != nil {
			return nil, err
		}
		ops = make([]Op, 0, n)
		adviseHugePages(ops[:n])
	}
	rd := NewReader(r)
	rd.Contract = contract
	for {
		var op Op
		if _, err := rd.next(&op); err != nil {
			if len(ops) == 0 {
				ops = nil // as before the count
			}
			if err == io.EOF {
				return ops, nil
			}
			return ops, err
		}
		ops = append(ops, op)
	}
}

// countLines counts the lines from s's offset on (a last line without a
// newline too) and seeks back. It counts 0 when s cannot seek (a pipe). A
// read error stops the count early; the read after it meets it again.
func countLines(s io.ReadSeeker) (int, error) {
	at, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, nil
	}
	buf := make([]byte, 64<<10)
	n, last := 0, byte('\n')
	for {
		m, err := s.Read(buf)
		if m > 0 {
			n += bytes.Count(buf[:m], []byte{'\n'})
			last = buf[m-1]
		}
		if err != nil {
			break
		}
	}
	if last != '\n' {
		n++
	}
	if _, err := s.Seek(at, io.SeekStart); err != nil {
		return 0, fmt.Errorf("history: seek back after counting lines: %w", err)
	}
	return n, nil
}

// ReadFile reads the history in path; see ReadAll for truncated files. A
// large file is parsed in two halves side by side, with the same result.
func ReadFile(path string) ([]Op, error) { return readFile(path, false) }

// ReadFileContract is ReadFile with every line held to the contract (see
// Reader.Contract): what `locktorture analyze` reads a history nobody
// vetted with.
func ReadFileContract(path string) ([]Op, error) { return readFile(path, true) }

func readFile(path string, contract bool) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	var ops []Op
	split := false
	st, err := f.Stat()
	regular := err == nil && st.Mode().IsRegular()
	if regular && st.Size() >= splitMin && runtime.GOMAXPROCS(0) > 1 {
		ops, split, err = readSplit(f, st.Size(), st.Size()/2, contract)
	}
	switch {
	case split:
	case regular:
		ops, err = readAll(f, contract)
	default:
		// Not a file whose end is known (a device, a pipe): read it
		// line by line, never counted first.
		ops, err = readAll(struct{ io.Reader }{f}, contract)
	}
	if err != nil {
		return ops, fmt.Errorf("%s: %w", path, err)
	}
	return ops, nil
}
