package yamlkeys

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type settings struct {
	Members int `yaml:"members"`
}

func TestDecode(t *testing.T) {
	fresh := func() *settings { return &settings{Members: 1} }
	for _, tc := range []struct {
		name, text string
		fresh      func() *settings
		want       int    // Members decoded; -1: nil value
		err        string // in the error; "" none
	}{
		{"absent", "", fresh, 1, ""},
		{"null", "~", fresh, 1, ""},
		{"given", "{members: 3}", fresh, 3, ""},
		{"unknown key", "{memebrs: 3}", fresh, 0, `line 1: etcd takes no setting "memebrs" (it takes: members)`},
		{"not a mapping", "3", fresh, 0, "line 1: the settings of etcd are a mapping of its keys (members)"},
		{"wrong type", "{members: many}", fresh, 0, "line 1"},
		{"takes none, none given", "{}", nil, -1, ""},
		{"takes none, some given", "{members: 3}", nil, 0, "line 1: etcd takes none here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n *yaml.Node
			if tc.text != "" {
				var doc yaml.Node
				if err := yaml.Unmarshal([]byte(tc.text), &doc); err != nil {
					t.Fatal(err)
				}
				n = doc.Content[0]
			}
			got, err := Decode(n, Block{Owner: "etcd", Noun: "setting", None: "takes none here"}, tc.fresh)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Decode = %v, %v; want an error with %q", got, err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want == -1:
				if got != nil {
					t.Fatalf("Decode = %#v, want nil", got)
				}
			case got.Members != tc.want:
				t.Fatalf("members %d, want %d", got.Members, tc.want)
			}
		})
	}
}
