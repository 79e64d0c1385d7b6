package history

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// fieldSet is a set of Op fields, one bit each. decodeOp and
// Reader.nextFields report which fields a line had, so that a caller can
// name a missing one.
type fieldSet uint16

// The fields of an Op, by their JSON names.
const (
	fieldIndex   fieldSet = 1 << iota // "index"
	fieldTime                         // "time"
	fieldProcess                      // "process"
	fieldType                         // "type"
	fieldF                            // "f"
	fieldKey                          // "key"
	fieldValue                        // "value"
	fieldFence                        // "fence"
	fieldLeaseMS                      // "lease_ms"
	fieldError                        // "error"
	fieldTx                           // "tx"
)

// fieldNames are the JSON names of the fields, bit by bit.
var fieldNames = [...]string{"index", "time", "process", "type", "f", "key", "value", "fence", "lease_ms", "error", "tx"}

// Has reports whether f holds every field of g.
func (f fieldSet) Has(g fieldSet) bool { return f&g == g }

// String lists the fields' JSON names, comma-separated, in the order of Op
// (e.g. "index,type"); the empty set is "".
func (f fieldSet) String() string {
	var b strings.Builder
	for i, name := range fieldNames {
		if f&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(name)
		}
	}
	return b.String()
}

// decodeOp decodes one history line. It gives the same Op as
// json.Unmarshal(line, &op) and fails wherever that fails, with its error
// (and a zero Op). The fieldSet says which fields the line named, matched as
// json.Unmarshal matches them (ignoring case); a field given as null
// counts, though json.Unmarshal leaves it as it was (a Fence or LeaseMS
// nil, a Value "null").
func decodeOp(line []byte) (Op, fieldSet, error) {
	var d decoder
	var op Op
	fields, err := d.decode(line, &op)
	return op, fields, err
}

// Sizes of a decoder's arenas and string table.
const (
	bytesArena = 32 << 10 // bytes per block of Values
	intsArena  = 512      // int64s per block of Fences and LeaseMSs
	internMax  = 4096     // distinct strings interned at most
	internLen  = 64       // longest string interned
	maxDepth   = 1000     // deepest nesting the fast path takes (json allows 10000)
)

// decoder decodes lines into Ops: a fast path for the lines the writer
// produces, and json.Unmarshal for anything else. Its zero value allocates
// every string, Value and pointer on its own; one made by newDecoder (for a
// Reader, which decodes many lines) shares repeated strings and carves
// Values and the Fence and LeaseMS pointers out of larger blocks.
type decoder struct {
	intern  *strtab // nil: no interning
	arena   bool
	bytes   []byte  // the free part of the current block of Values
	ints    []int64 // the free part of the current block of ints
	scratch []byte  // an unquoted string
}

// strtab holds the strings a decoder interns: all of them in a map, and
// the last one seen per hash slot in a small table looked at first.
type strtab struct {
	all    map[string]string
	recent [512]string
}

func newDecoder() decoder {
	return decoder{intern: &strtab{all: make(map[string]string)}, arena: true}
}

// decode decodes line into *op, which it zeroes first.
func (d *decoder) decode(line []byte, op *Op) (fieldSet, error) {
	*op = Op{}
	if fields, ok := d.fast(line, op); ok {
		return fields, nil
	}
	slow, fields, err := slowDecode(line)
	*op = slow
	return fields, err
}

// present records, when json.Unmarshal calls it, that a field was in the
// line (null included).
type present bool

func (p *present) UnmarshalJSON([]byte) error {
	*p = true
	return nil
}

// slowDecode is json.Unmarshal, and a second pass for which fields it saw.
// On an error the Op is zero.
func slowDecode(line []byte) (Op, fieldSet, error) {
	var op Op
	if err := json.Unmarshal(line, &op); err != nil {
		return Op{}, 0, err
	}
	var seen struct {
		Index   present `json:"index"`
		Time    present `json:"time"`
		Process present `json:"process"`
		Type    present `json:"type"`
		F       present `json:"f"`
		Key     present `json:"key"`
		Value   present `json:"value"`
		Fence   present `json:"fence"`
		LeaseMS present `json:"lease_ms"`
		Error   present `json:"error"`
		Tx      present `json:"tx"`
	}
	if err := json.Unmarshal(line, &seen); err != nil {
		return Op{}, 0, err
	}
	var fields fieldSet
	for i, p := range [...]present{seen.Index, seen.Time, seen.Process, seen.Type, seen.F, seen.Key,
		seen.Value, seen.Fence, seen.LeaseMS, seen.Error, seen.Tx} {
		if p {
			fields |= 1 << i
		}
	}
	return op, fields, nil
}

// fast decodes the common line: an object whose keys are plain ASCII. It
// reports false, leaving *op in any state, for anything it does not handle
// or that is not valid, and then json.Unmarshal decides.
func (d *decoder) fast(s []byte, op *Op) (fieldSet, bool) {
	if fields, ok := d.written(s, op); ok {
		return fields, true
	}
	*op = Op{}
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return 0, false
	}
	var fields fieldSet
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return 0, skipSpace(s, i+1) == len(s)
	}
	for {
		// The key: only plain ASCII, no escapes.
		if i >= len(s) || s[i] != '"' {
			return 0, false
		}
		j := i + 1
		for j < len(s) && plain[s[j]] {
			j++
		}
		if j >= len(s) || s[j] != '"' {
			return 0, false
		}
		f := fieldOf(s[i+1 : j])
		i = skipSpace(s, j+1)
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i = skipSpace(s, i+1)
		var ok bool
		if i, ok = d.value(s, i, f, op); !ok {
			return 0, false
		}
		fields |= f
		i = skipSpace(s, i)
		if i >= len(s) {
			return 0, false
		}
		if s[i] == '}' {
			return fields, skipSpace(s, i+1) == len(s)
		}
		if s[i] != ',' {
			return 0, false
		}
		i = skipSpace(s, i+1)
	}
}

// written decodes a line in the form appendOp writes (the history's own):
// the five required keys first, in Op's order, then any of the optional
// ones, each spelled exactly, with no white space around them; each value
// is decoded as fast decodes it (a key given twice, too: the last wins).
// Whatever is not in that form (a key in another spelling or case, white
// space) reports false, leaving *op in any state, and fast's general path
// decodes it. It spares the history's lines the reading of each key: each
// is matched whole, an optional one found by its third byte.
func (d *decoder) written(s []byte, op *Op) (fieldSet, bool) {
	i, ok := 0, false
	for _, k := range [...]struct {
		lit string
		f   fieldSet
	}{{`{"index":`, fieldIndex}, {`,"time":`, fieldTime}, {`,"process":`, fieldProcess}, {`,"type":`, fieldType}, {`,"f":`, fieldF}} {
		if len(s)-i < len(k.lit) || string(s[i:i+len(k.lit)]) != k.lit {
			return 0, false
		}
		if i, ok = d.value(s, i+len(k.lit), k.f, op); !ok {
			return 0, false
		}
	}
	fields := fieldIndex | fieldTime | fieldProcess | fieldType | fieldF
	for i < len(s)-3 && s[i] == ',' {
		var lit string
		var f fieldSet
		switch s[i+2] {
		case 'k':
			lit, f = `,"key":`, fieldKey
		case 'v':
			lit, f = `,"value":`, fieldValue
		case 'f':
			lit, f = `,"fence":`, fieldFence
		case 'l':
			lit, f = `,"lease_ms":`, fieldLeaseMS
		case 'e':
			lit, f = `,"error":`, fieldError
		case 't':
			lit, f = `,"tx":`, fieldTx
		default:
			return 0, false
		}
		if len(s)-i < len(lit) || string(s[i:i+len(lit)]) != lit {
			return 0, false
		}
		if i, ok = d.value(s, i+len(lit), f, op); !ok {
			return 0, false
		}
		fields |= f
	}
	return fields, i == len(s)-1 && s[i] == '}'
}

// fieldOf returns the field an ASCII key names, as json.Unmarshal matches
// it (exactly, else ignoring case), or 0 for none.
func fieldOf(key []byte) fieldSet {
	switch string(key) {
	case "index":
		return fieldIndex
	case "time":
		return fieldTime
	case "process":
		return fieldProcess
	case "type":
		return fieldType
	case "f":
		return fieldF
	case "key":
		return fieldKey
	case "value":
		return fieldValue
	case "fence":
		return fieldFence
	case "lease_ms":
		return fieldLeaseMS
	case "error":
		return fieldError
	case "tx":
		return fieldTx
	}
	for i, name := range fieldNames {
		if asciiEqualFold(key, name) {
			return 1 << i
		}
	}
	return 0
}

// asciiEqualFold reports whether ASCII key and name are equal ignoring case.
func asciiEqualFold(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// value decodes the value at s[i] into field f of op (f 0: an unknown
// field, skipped) and returns the index after it.
func (d *decoder) value(s []byte, i int, f fieldSet, op *Op) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	if s[i] == 'n' {
		// null leaves a field as it is, but for the pointers (nil) and
		// the raw Value (null).
		end, ok := literal(s, i, "null")
		if !ok {
			return i, false
		}
		switch f {
		case fieldValue:
			op.Value = d.raw(s[i:end])
		case fieldFence:
			op.Fence = nil
		case fieldLeaseMS:
			op.LeaseMS = nil
		}
		return end, true
	}
	switch f {
	case fieldIndex:
		return parseInt(s, i, &op.Index)
	case fieldTime:
		return parseInt(s, i, &op.Time)
	case fieldProcess:
		var n int64
		end, ok := parseInt(s, i, &n)
		if !ok || int64(int(n)) != n {
			return i, false
		}
		op.Process = int(n)
		return end, true
	case fieldFence:
		return d.parseIntPtr(s, i, &op.Fence)
	case fieldLeaseMS:
		return d.parseIntPtr(s, i, &op.LeaseMS)
	case fieldType:
		str, end, ok := d.str(s, i, knownType)
		op.Type = Type(str)
		return end, ok
	case fieldF:
		str, end, ok := d.str(s, i, knownF)
		op.F = str
		return end, ok
	case fieldKey:
		str, end, ok := d.str(s, i, nil)
		op.Key = str
		return end, ok
	case fieldError:
		str, end, ok := d.str(s, i, nil)
		op.Error = str
		return end, ok
	case fieldTx:
		if end, ok := literal(s, i, "true"); ok {
			op.Tx = true
			return end, true
		}
		if end, ok := literal(s, i, "false"); ok {
			op.Tx = false
			return end, true
		}
		return i, false
	case fieldValue:
		end, ok := skipValue(s, i, 0)
		if !ok {
			return i, false
		}
		op.Value = d.raw(s[i:end])
		return end, true
	default:
		return skipValue(s, i, 0)
	}
}

// parseInt parses the JSON integer at s[i] into *n. It refuses fractions,
// exponents and anything out of int64's range, which json.Unmarshal
// refuses too.
func parseInt(s []byte, i int, n *int64) (int, bool) {
	j := i
	neg := j < len(s) && s[j] == '-'
	if neg {
		j++
	}
	start := j
	var u uint64 // wraps past 20 digits, but those are refused below
	for ; j < len(s); j++ {
		c := s[j] - '0'
		if c > 9 {
			break
		}
		u = u*10 + uint64(c)
	}
	digits := j - start
	switch {
	case digits == 0 || digits > 19:
		return i, false // not a number, or maybe past int64
	case digits > 1 && s[start] == '0':
		return i, false // a leading zero: not JSON
	case j < len(s) && (s[j] == '.' || s[j] == 'e' || s[j] == 'E'):
		return i, false // not an integer
	case !neg && u <= 1<<63-1:
		*n = int64(u)
	case neg && u <= 1<<63:
		*n = -int64(u-1) - 1
	default:
		return i, false
	}
	return j, true
}

// parseIntPtr parses the integer at s[i] into **p, setting *p first when
// nil, as json.Unmarshal does.
func (d *decoder) parseIntPtr(s []byte, i int, p **int64) (int, bool) {
	var n int64
	end, ok := parseInt(s, i, &n)
	if !ok {
		return i, false
	}
	if *p == nil {
		*p = d.newInt()
	}
	**p = n
	return end, true
}

// str decodes the JSON string at s[i]. known, when not nil, names the
// strings the field usually holds: one of them is returned as it is, not
// looked up among the interned ones.
func (d *decoder) str(s []byte, i int, known func([]byte) string) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", i, false
	}
	j := i + 1
	for j < len(s) && plain[s[j]] {
		j++
	}
	if j < len(s) && s[j] == '"' {
		if known != nil {
			if k := known(s[i+1 : j]); k != "" {
				return k, j + 1, true
			}
		}
		return d.intern1(s[i+1 : j]), j + 1, true
	}
	end, ok := skipString(s, i)
	if !ok {
		return "", i, false
	}
	d.scratch = unquote(d.scratch[:0], s[i+1:end-1])
	return d.intern1(d.scratch), end, true
}

// knownType returns the op type b spells, or "".
func knownType(b []byte) string {
	switch string(b) {
	case "invoke":
		return string(Invoke)
	case "ok":
		return string(OK)
	case "fail":
		return string(Fail)
	case "info":
		return string(Info)
	}
	return ""
}

// knownF returns the client op b names, or "".
func knownF(b []byte) string {
	switch string(b) {
	case Acquire:
		return Acquire
	case Release:
		return Release
	case Extend:
		return Extend
	case Read:
		return Read
	case Write:
		return Write
	case FinalRead:
		return FinalRead
	case Lost:
		return Lost
	}
	return ""
}

// intern1 returns b as a string, the same string every time for short
// repeated ones when the decoder interns.
func (d *decoder) intern1(b []byte) string {
	t := d.intern
	if t == nil || len(b) > internLen {
		return string(b)
	}
	h := uint(len(b))
	for _, c := range b {
		h = h*31 + uint(c)
	}
	slot := &t.recent[h%uint(len(t.recent))]
	if *slot == string(b) {
		return *slot
	}
	s, ok := t.all[string(b)]
	if !ok {
		s = string(b)
		if len(t.all) < internMax {
			t.all[s] = s
		}
	}
	*slot = s
	return s
}

// raw returns a copy of b, from the decoder's current block when it has
// one. The copy's capacity is its length, so appending to it never
// overwrites its neighbours.
func (d *decoder) raw(b []byte) json.RawMessage {
	if !d.arena || len(b) > bytesArena/8 {
		return append(json.RawMessage(nil), b...)
	}
	if cap(d.bytes)-len(d.bytes) < len(b) {
		d.bytes = make([]byte, 0, bytesArena)
	}
	start := len(d.bytes)
	d.bytes = append(d.bytes, b...)
	return d.bytes[start:len(d.bytes):len(d.bytes)]
}

// newInt returns a pointer to a fresh int64, from the decoder's current
// block when it has one.
func (d *decoder) newInt() *int64 {
	if !d.arena {
		return new(int64)
	}
	if len(d.ints) == 0 {
		d.ints = make([]int64, intsArena)
	}
	p := &d.ints[0]
	d.ints = d.ints[1:]
	return p
}

// skipSpace returns the index of the first byte from i on that is not JSON
// white space.
func skipSpace(s []byte, i int) int {
	for i < len(s) && s[i] <= ' ' && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// plain holds the bytes that stand for themselves in a JSON string and
// need no checking: printable ASCII but for the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// literal matches the literal word (true, false, null) at s[i].
func literal(s []byte, i int, word string) (int, bool) {
	if len(s)-i >= len(word) && string(s[i:i+len(word)]) == word {
		return i + len(word), true
	}
	return i, false
}

// skipValue returns the index just after the valid JSON value at s[i],
// depth levels down. The caller checks what follows it.
func skipValue(s []byte, i, depth int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '"':
		return skipString(s, i)
	case c == '-' || ('0' <= c && c <= '9'):
		return skipNumber(s, i)
	case c == 't':
		return literal(s, i, "true")
	case c == 'f':
		return literal(s, i, "false")
	case c == 'n':
		return literal(s, i, "null")
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return i, false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == end {
			return i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i >= len(s) || s[i] != '"' {
					return i, false
				}
				if i, ok = skipString(s, i); !ok {
					return i, false
				}
				i = skipSpace(s, i)
				if i >= len(s) || s[i] != ':' {
					return i, false
				}
				i = skipSpace(s, i+1)
			}
			if i, ok = skipValue(s, i, depth+1); !ok {
				return i, false
			}
			i = skipSpace(s, i)
			if i >= len(s) {
				return i, false
			}
			if s[i] == end {
				return i + 1, true
			}
			if s[i] != ',' {
				return i, false
			}
			i = skipSpace(s, i+1)
		}
	}
	return i, false
}

// skipString returns the index just after the valid JSON string at s[i]:
// no control characters, only JSON's escapes. Any other byte is allowed,
// as json.Unmarshal allows it (invalid UTF-8 is replaced on unquoting).
func skipString(s []byte, i int) (int, bool) {
	if i >= len(s) || s[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return j + 1, true
		case c < ' ':
			return i, false
		case c == '\\':
			j++
			if j >= len(s) {
				return i, false
			}
			switch s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(s)-j < 5 {
					return i, false
				}
				for _, h := range s[j+1 : j+5] {
					if unhex(h) < 0 {
						return i, false
					}
				}
				j += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

// skipNumber returns the index just after the valid JSON number at s[i].
func skipNumber(s []byte, i int) (int, bool) {
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case j < len(s) && '1' <= s[j] && s[j] <= '9':
		j = skipDigits(s, j)
	default:
		return i, false
	}
	if j < len(s) && s[j] == '.' {
		k := skipDigits(s, j+1)
		if k == j+1 {
			return i, false
		}
		j = k
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := skipDigits(s, j)
		if k == j {
			return i, false
		}
		j = k
	}
	return j, true
}

func skipDigits(s []byte, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// getu4 decodes the \uXXXX escape at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		h := unhex(c)
		if h < 0 {
			return -1
		}
		r = r<<4 | h
	}
	return r
}

// unquote appends to b the inside of a JSON string already checked by
// skipString, decoded as json.Unmarshal decodes it: escapes resolved, a
// surrogate pair joined, a lone surrogate and invalid UTF-8 replaced by
// U+FFFD.
func unquote(b, s []byte) []byte {
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
						r += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, s[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return b
}
