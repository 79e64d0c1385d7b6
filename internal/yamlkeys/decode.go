package yamlkeys

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Block says how a scenario's block of someone's own settings reads: a
// backend's backend_options entry, a kind's block.
type Block struct {
	// Owner names whose settings they are: a kind of server, a backend.
	Owner string
	// Noun is what one of them is called ("setting", "option").
	Noun string
	// None is said when the owner takes no settings and the block gives
	// some ("takes no options").
	None string
}

// Decode decodes n strictly into the value fresh makes (a pointer to a
// struct whose yaml tags are its keys, or a map for free settings; fresh
// nil: the owner takes none): that value (its defaults) when n is absent or
// null, T's zero value when the owner takes none; an
// error naming n's line when n is not a mapping, when it gives a key the
// value's yaml tags do not name, or when a value has the wrong type
// (yaml's own errors, which name their lines, kept whole).
func Decode[T any](n *yaml.Node, b Block, fresh func() T) (T, error) {
	var none T
	given := n != nil && n.Kind != 0 && !(n.Kind == yaml.ScalarNode && n.Tag == "!!null")
	if fresh == nil {
		if given && (n.Kind != yaml.MappingNode || len(n.Content) > 0) {
			return none, fmt.Errorf("line %d: %s %s", n.Line, b.Owner, b.None)
		}
		return none, nil
	}
	o := fresh()
	if !given {
		return o, nil
	}
	takes := Of(any(o))
	if n.Kind != yaml.MappingNode {
		if takes == nil {
			return none, fmt.Errorf("line %d: the %ss of %s are a mapping", n.Line, b.Noun, b.Owner)
		}
		return none, fmt.Errorf("line %d: the %ss of %s are a mapping of its keys (%s)", n.Line, b.Noun, b.Owner, strings.Join(takes, ", "))
	}
	if takes != nil {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if key := n.Content[i]; !slices.Contains(takes, key.Value) {
				return none, fmt.Errorf("line %d: %s takes no %s %q (it takes: %s)", key.Line, b.Owner, b.Noun, key.Value, strings.Join(takes, ", "))
			}
		}
	}
	if err := n.Decode(o); err != nil {
		return none, err
	}
	return o, nil
}
