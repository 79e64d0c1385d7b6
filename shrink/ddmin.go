package shrink

import "context"

// subsetTest says whether a subset (of the indexes given to ddmin, in their
// order) still fails. An error stops the search.
type subsetTest func(ctx context.Context, subset []int) (bool, error)

// ddmin is Zeller's delta debugging (ddmin): from items, which fail,
// it finds a subset that still fails and from which no single item can be
// dropped without the failure going away (1-minimal), testing halves, then
// smaller chunks and their complements. It never tests the empty set or
// items itself, and is deterministic: the same answers from test give the
// same calls in the same order. On an error it returns the smallest
// failing subset found so far with the error.
func ddmin(ctx context.Context, items []int, test subsetTest) ([]int, error) {
	cur := append([]int(nil), items...)
	n := 2
	for len(cur) >= 2 {
		chunks := split(cur, n)
		reduced := false
		for _, c := range chunks {
			ok, err := test(ctx, c)
			if err != nil {
				return cur, err
			}
			if ok {
				cur, n, reduced = c, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range chunks {
				comp := complement(chunks, i)
				ok, err := test(ctx, comp)
				if err != nil {
					return cur, err
				}
				if ok {
					cur, n, reduced = comp, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(cur) {
				break
			}
			n = min(2*n, len(cur))
		}
	}
	return cur, nil
}

// split cuts xs into n chunks of near-equal size, in order.
func split(xs []int, n int) [][]int {
	out := make([][]int, 0, n)
	start := 0
	for i := range n {
		end := start + (len(xs)-start)/(n-i)
		out = append(out, append([]int(nil), xs[start:end]...))
		start = end
	}
	return out
}

// complement joins every chunk but the i-th.
func complement(chunks [][]int, i int) []int {
	var out []int
	for j, c := range chunks {
		if j != i {
			out = append(out, c...)
		}
	}
	return out
}
