// Package words holds the English the harness writes in many places: a
// count and its noun ("1 cell", "3 cells"). (checker keeps its own: it
// imports nothing of ours but history, so a stored history can be
// re-checked anywhere.)
package words

import "strconv"

// Count is n followed by the noun in the number n asks: "1 cell",
// "3 cells", "0 cells".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Noun(n, one, many)
}

// Noun is one when n is 1, else many.
func Noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
