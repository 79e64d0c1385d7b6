package history

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
)

// keepBytes is the size of one block of the lines a Recorder keeps.
const keepBytes = 1 << 20

// kept is the history a Recorder that writes one also keeps in memory:
// each op as the line it wrote (appendOp's, byte for byte what the file
// holds), in blocks of bytes, and decoded back into ops by History. Bytes
// cost a client less than ops as they are recorded: a line is about
// two-thirds of an Op's size, a copy of it needs no write barriers, and
// the garbage collector does not scan the blocks, however long the run.
// An op whose line could not be made (a Value that is not JSON) is kept
// as it is, in its place.
type kept struct {
	blocks [][]byte // whole lines, each ending in '\n'
	lines  []int    // lines in each block
	n      int      // ops kept
	odd    []oddOp  // ops kept as they are, in order of position
}

// oddOp is an op kept as it is, at position at of the history.
type oddOp struct {
	at int
	op Op
}

// addLine keeps line (an op's, ending in '\n').
func (k *kept) addLine(line []byte) {
	last := len(k.blocks) - 1
	if last < 0 || cap(k.blocks[last])-len(k.blocks[last]) < len(line) {
		k.blocks = append(k.blocks, make([]byte, 0, max(keepBytes, len(line))))
		k.lines = append(k.lines, 0)
		last++
	}
	k.blocks[last] = append(k.blocks[last], line...)
	k.lines[last]++
	k.n++
}

// addOp keeps op as it is.
func (k *kept) addOp(op Op) {
	k.odd = append(k.odd, oddOp{k.n, op})
	k.n++
}

// history decodes the kept ops, the blocks side by side.
func (k *kept) history() []Op {
	ops := make([]Op, k.n)
	adviseHugePages(ops)
	if len(k.odd) > 0 {
		k.decodeInOrder(ops)
		return ops
	}
	starts := make([]int, len(k.blocks)) // each block's first op
	for b := 1; b < len(k.blocks); b++ {
		starts[b] = starts[b-1] + k.lines[b-1]
	}
	workers := min(runtime.GOMAXPROCS(0), len(k.blocks))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			d := newDecoder()
			for b := w; b < len(k.blocks); b += workers {
				out := ops[starts[b] : starts[b]+k.lines[b]]
				for i, rest := 0, k.blocks[b]; len(rest) > 0; i++ {
					rest = decodeKept(&d, rest, &out[i])
				}
			}
		})
	}
	wg.Wait()
	return ops
}

// decodeInOrder decodes the kept ops one by one, the odd ones in their
// places.
func (k *kept) decodeInOrder(ops []Op) {
	d := newDecoder()
	odd := k.odd
	b, rest := 0, []byte(nil)
	for i := range ops {
		if len(odd) > 0 && odd[0].at == i {
			ops[i], odd = odd[0].op, odd[1:]
			continue
		}
		for len(rest) == 0 {
			rest, b = k.blocks[b], b+1
		}
		rest = decodeKept(&d, rest, &ops[i])
	}
}

// decodeKept decodes the first line of rest into *op and returns the rest
// after it. The line is appendOp's, which always decodes: a failure is a
// bug, and panics.
func decodeKept(d *decoder, rest []byte, op *Op) []byte {
	end := bytes.IndexByte(rest, '\n')
	if _, err := d.decode(rest[:end], op); err != nil {
		panic(fmt.Sprintf("history: a recorded line does not decode: %v: %s", err, rest[:end]))
	}
	return rest[end+1:]
}
