package cluster

import (
	"strconv"
	"strings"
)

func fmtInt(n int) string       { return strconv.Itoa(n) }
func indexOf(s, sub string) int { return strings.Index(s, sub) }
