package history

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// appendOp appends op's JSON encoding, without a newline, to dst: byte for
// byte what json.Marshal(op) gives. Like json.Marshal, it fails when
// op.Value is not valid JSON; then dst comes back as it was.
func appendOp(dst []byte, op *Op) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, op.Index, 10)
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, op.Time, 10)
	dst = append(dst, `,"process":`...)
	dst = strconv.AppendInt(dst, int64(op.Process), 10)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, string(op.Type))
	dst = append(dst, `,"f":`...)
	dst = appendString(dst, op.F)
	if op.Key != "" {
		dst = append(dst, `,"key":`...)
		dst = appendString(dst, op.Key)
	}
	if len(op.Value) > 0 {
		if !verbatim(op.Value) {
			// json.Marshal compacts and escapes the Value, or refuses it.
			b, err := marshal(*op)
			if err != nil {
				return dst[:start], err
			}
			return append(dst[:start], b...), nil
		}
		dst = append(dst, `,"value":`...)
		dst = append(dst, op.Value...)
	}
	if op.Fence != nil {
		dst = append(dst, `,"fence":`...)
		dst = strconv.AppendInt(dst, *op.Fence, 10)
	}
	if op.LeaseMS != nil {
		dst = append(dst, `,"lease_ms":`...)
		dst = strconv.AppendInt(dst, *op.LeaseMS, 10)
	}
	if op.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, op.Error)
	}
	if op.Tx {
		dst = append(dst, `,"tx":true`...)
	}
	return append(dst, '}'), nil
}

// marshal is json.Marshal on a copy of op, so that appendOp's op does not
// escape to the heap.
func marshal(op Op) ([]byte, error) { return json.Marshal(&op) }

// verbatim reports whether json.Marshal writes the raw value v as it is:
// valid JSON, compact (no white space at all, even inside strings, to keep
// the check simple) and with nothing it escapes (<, >, &, U+2028, U+2029,
// or any other non-ASCII byte, again to keep it simple).
func verbatim(v []byte) bool {
	for _, c := range v {
		switch {
		case c == '"' || c == '\\':
		case !plain[c] || c == ' ' || c == '<' || c == '>' || c == '&':
			return false
		}
	}
	end, ok := skipValue(v, 0, 0)
	return ok && end == len(v)
}

// appendString appends s as a JSON string, escaped as json.Marshal escapes
// it (HTML's <, > and & too; invalid UTF-8 as U+FFFD).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plain[c] && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				const hex = "0123456789abcdef"
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028':
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\u2028`...)
		case r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\u2029`...)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
