package scenarios

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Limits on what a scenario may ask for. A file past one of them is
// refused before it is decoded: yaml.v3 compares every pair of keys of a
// mapping, so a file of 900,000 keys would keep it busy for minutes.
const (
	// maxFileSize bounds a scenario file (1 MiB).
	maxFileSize = 1 << 20
	// maxMapping bounds the entries of any one mapping (postgres.settings,
	// expect.backends, ...).
	maxMapping = 1000
	// maxList bounds the items of any one list; nemesis.script is one.
	maxList = 10000
	// maxNodes bounds the values of a whole file, counting each alias as
	// the values it stands for.
	maxNodes = 250000
	// maxClients, maxKeys and maxSteps bound the run itself.
	maxClients = 1000
	maxKeys    = 100000
	maxSteps   = maxList
)

// sizeError is a limit a file breaks, at a line.
type sizeError struct {
	line int
	msg  string
}

func (e *sizeError) Error() string { return e.msg }

// checkSizes walks the parsed file and refuses it when a mapping, a list
// or the whole (aliases expanded) is past the limits.
func checkSizes(root *yaml.Node) error {
	z := sizer{done: map[*yaml.Node]int{}, busy: map[*yaml.Node]bool{}}
	_, err := z.size(root, "", root.Line)
	return err
}

type sizer struct {
	done map[*yaml.Node]int // values under a node, aliases expanded
	busy map[*yaml.Node]bool
}

// size counts the values under n, found at the path at; line is where
// an error points (a mapping's value: its key's line).
func (z *sizer) size(n *yaml.Node, at string, line int) (int, error) {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1, nil
		}
		if z.busy[n.Alias] {
			return 0, &sizeError{n.Line, fmt.Sprintf("%s: the alias *%s refers to a value that contains it", where(at), n.Value)}
		}
		n = n.Alias
	}
	if v, ok := z.done[n]; ok {
		return v, nil
	}
	switch {
	case n.Kind == yaml.MappingNode && len(n.Content)/2 > maxMapping:
		return 0, &sizeError{line, fmt.Sprintf("%s has %d entries, more than the limit of %d", where(at), len(n.Content)/2, maxMapping)}
	case n.Kind == yaml.SequenceNode && len(n.Content) > maxList:
		return 0, &sizeError{line, fmt.Sprintf("%s has %d items, more than the limit of %d", where(at), len(n.Content), maxList)}
	}
	z.busy[n] = true
	total := 1
	for i, c := range n.Content {
		sub, subLine := at, c.Line
		switch n.Kind {
		case yaml.MappingNode:
			if i%2 == 1 {
				sub, subLine = join(at, n.Content[i-1].Value), n.Content[i-1].Line
			}
		case yaml.SequenceNode:
			sub = at + "[" + strconv.Itoa(i) + "]"
		}
		v, err := z.size(c, sub, subLine)
		if err != nil {
			return 0, err
		}
		if total += v; total > maxNodes {
			return 0, &sizeError{1, fmt.Sprintf("the file holds more than %d values, aliases expanded", maxNodes)}
		}
	}
	delete(z.busy, n)
	z.done[n] = total
	return total, nil
}

// join names a mapping entry below at ("nemesis" + "script").
func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// where names the place at in an error.
func where(at string) string {
	if at == "" {
		return "the file"
	}
	q := strconv.Quote(at) // a key may hold control characters
	return q[1 : len(q)-1]
}
