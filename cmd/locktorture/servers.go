package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/locktorture/locktorture/cluster"
	// Linked in for `--servers docker`: the cluster package itself does
	// not depend on a container library.
	_ "github.com/locktorture/locktorture/cluster/docker"
)

// imageFlag adds the repeatable --image KIND=REF flag to fs; the map it
// returns fills as fs parses (the kinds are checked with the scenario).
func imageFlag(fs *flag.FlagSet) map[string]string {
	images := map[string]string{}
	fs.Func("image", "with --servers docker: the image for a `KIND=REF` of server ("+strings.Join(cluster.KindNames(), ", ")+", or all=REF for every kind; repeatable; make images builds locktorture-servers:bookworm)", func(v string) error {
		kind, ref, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(kind) == "" || strings.TrimSpace(ref) == "" {
			return fmt.Errorf("want KIND=REF (redis=redis:7.4, all=locktorture-servers:bookworm), not %q", v)
		}
		images[strings.TrimSpace(kind)] = strings.TrimSpace(ref)
		return nil
	})
	return images
}

// imageArgs are --image flags for images, sorted by kind.
func imageArgs(images map[string]string) []string {
	kinds := make([]string, 0, len(images))
	for k := range images {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var out []string
	for _, k := range kinds {
		out = append(out, "--image", k+"="+images[k])
	}
	return out
}
