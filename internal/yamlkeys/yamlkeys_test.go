package yamlkeys

import (
	"slices"
	"testing"
)

type inner struct {
	A int `yaml:"a_key"`
}

type outer struct {
	inner  `yaml:",inline"`
	B      string `yaml:"b,omitempty"`
	Plain  bool
	Hidden int `yaml:"-"`
	hidden int
}

func TestOf(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want []string
	}{
		{"struct with inline, tags, plain and hidden fields", &outer{}, []string{"a_key", "b", "plain"}},
		{"a value, not a pointer", outer{}, []string{"a_key", "b", "plain"}},
		{"an empty struct", &struct{}{}, []string{}},
		{"a map", map[string]any{}, nil},
		{"nil", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.v); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("Of = %#v, want %#v", got, tc.want)
			}
		})
	}
	_ = outer{}.hidden
}
