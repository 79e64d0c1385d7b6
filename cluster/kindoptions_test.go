package cluster_test

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
)

// TestDecodeKindOptions: a kind's block is decoded strictly into the
// kind's own options, from its defaults; a kind that takes none takes an
// empty block only, and an unknown kind none at all.
func TestDecodeKindOptions(t *testing.T) {
	node := func(in string) *yaml.Node {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(in), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Content[0]
	}
	tests := []struct {
		kind, in string
		want     cluster.KindOptions
		err      string
	}{
		{etcd.Kind, "{members: 3}", &etcd.Options{Ensemble: cluster.Ensemble{Members: 3}}, ""},
		{etcd.Kind, "", &etcd.Options{Ensemble: cluster.Ensemble{Members: 1}}, ""},
		{zookeeper.Kind, "~", &zookeeper.Options{Ensemble: cluster.Ensemble{Members: 1}}, ""},
		{etcd.Kind, "{members: 3, args: [x]}", nil, `line 1: etcd takes no setting "args" (it takes: members)`},
		{etcd.Kind, "3", nil, "line 1: the settings of etcd are a mapping of its keys (members)"},
		{"mariadb", "{}", nil, ""},
		{"mariadb", "{size: 1}", nil, "line 1: mariadb takes no settings"},
		{"nosuchkind", "{}", nil, `no kind of server named "nosuchkind"`},
	}
	for _, tc := range tests {
		var n *yaml.Node
		if tc.in != "" {
			n = node(tc.in)
		}
		got, err := cluster.DecodeKindOptions(tc.kind, n)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %q: error %v, want %q", tc.kind, tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s %q: %v", tc.kind, tc.in, err)
		case tc.err == "" && !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s %q = %#v, want %#v", tc.kind, tc.in, got, tc.want)
		}
	}
	o := cluster.StartOptions{Kinds: map[string]cluster.KindOptions{etcd.Kind: &etcd.Options{Ensemble: cluster.Ensemble{Members: 3}}}}
	if got := cluster.OptionsOf[etcd.Options](o, etcd.Kind); got.Members != 3 {
		t.Errorf("OptionsOf etcd = %+v", got)
	}
	if got := cluster.OptionsOf[zookeeper.Options](o, zookeeper.Kind); got.Members != 0 {
		t.Errorf("OptionsOf zookeeper, none given = %+v", got)
	}
}
