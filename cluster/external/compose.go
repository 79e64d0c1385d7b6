// Package external holds what serves runs on servers someone else runs
// (--servers external) beside the core's servers file: a run's namespace
// there, made and removed (NewNamespace, Prepare, Cleanup, and the undo a
// guard replays: NamespaceUndo), the watch that notices one that goes
// away mid-run (Watch), and the standing cluster that docker-compose.yml
// brings up and compose.servers.yaml points such a run at (`locktorture
// compose`), both written from the registry of kinds.
package external

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/locktorture/locktorture/cluster"
)

// The standing cluster: docker-compose.yml brings up servers of every
// registered kind on 127.0.0.1 (host networking), and compose.servers.yaml
// points `--servers external` at them. Both are written from the registry
// (`locktorture compose`), so a kind's package is all a kind needs to be
// served there too: its cluster.Composer, or — for a kind that is one program
// (Kind.Program) — a service made from its ProgramSpec.

// composeImageVar is the environment variable that names kind's image in
// docker-compose.yml (REDIS_IMAGE).
func composeImageVar(kind string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(kind)) + "_IMAGE"
}

// programCompose is the standing cluster's one server of a kind that is
// one program: spec's command line on its block's first port.
func programCompose(kind string, spec cluster.ProgramSpec) cluster.ComposeSpec {
	return cluster.ComposeSpec{Services: func(port int, image string) cluster.ComposeCluster {
		name := kind + "-0"
		return cluster.ComposeCluster{
			Services: []cluster.ComposeService{{Name: name, Image: image,
				Command: append([]string{spec.Program}, spec.Args("127.0.0.1", port, "/tmp")...)}},
			Servers: map[string][]cluster.ServerEntry{kind: {cluster.ComposeEntry(name, "127.0.0.1:"+strconv.Itoa(port))}},
		}
	}}
}

// ComposeFiles writes docker-compose.yml and compose.servers.yaml for
// every registered kind; images[kind] (or images["all"]) replaces a
// kind's default image (Kind.Image) in the ${KIND_IMAGE:-default} each
// service runs from.
func ComposeFiles(images map[string]string) (compose, servers string, err error) {
	parts, err := composeParts(images)
	if err != nil {
		return "", "", err
	}
	return writeCompose(parts), writeComposeServers(parts), nil
}

// composePart is one kind's part, with the ports it was given.
type composePart struct {
	kind cluster.Kind
	cluster.ComposeCluster
}

// composeParts is every kind's part, in the order of the kinds' names.
func composeParts(images map[string]string) ([]composePart, error) {
	var parts []composePart
	used := map[int]string{}
	next := 17100
	for _, k := range cluster.Kinds() {
		var spec *cluster.ComposeSpec
		if c, ok := k.Abilities.(cluster.Composer); ok {
			spec = c.Compose()
		}
		if spec == nil && k.Program != nil {
			s := programCompose(k.Name, *k.Program)
			spec = &s
		}
		if spec == nil {
			continue
		}
		port := spec.Port
		if port == 0 {
			port, next = next, next+10
		}
		if other, dup := used[port]; dup {
			return nil, fmt.Errorf("cluster: compose: kinds %s and %s both have the ports from %d", other, k.Name, port)
		}
		used[port] = k.Name
		image := "${" + composeImageVar(k.Name) + ":-" + cluster.ResolveImage(images, k.Name, k.Image) + "}"
		parts = append(parts, composePart{kind: k, ComposeCluster: spec.Services(port, image)})
	}
	return parts, nil
}

// writeCompose is docker-compose.yml.
func writeCompose(parts []composePart) string {
	var b strings.Builder
	b.WriteString(`# Written by ` + "`locktorture compose`" + ` from the registered kinds of server: do not
# edit (a kind's file says how its servers run here). A standing test cluster
# for ` + "`locktorture run --servers external --servers-file compose.servers.yaml`" + `:
#
#   docker-compose down -v; docker-compose up -d      # (down first: see README)
#   locktorture run --scenario kleppmann-pause --servers external --servers-file compose.servers.yaml
#   docker-compose down -v
#
# Images: official ones by default; where nothing can be pulled, write the
# files for the image ` + "`make images`" + ` builds (locktorture compose --image
# all=locktorture-servers:bookworm), or set each kind's variable:
`)
	var vars []string
	for _, p := range parts {
		vars = append(vars, composeImageVar(p.kind.Name))
	}
	fmt.Fprintf(&b, "#   %s\n", strings.Join(vars, ", "))
	b.WriteString(`#
# Every server listens on 127.0.0.1 only, with host networking (Linux), so
# that the addresses Sentinel hands out are the ones the harness dials.
`)
	for _, p := range parts {
		var as []string
		for _, s := range p.Services {
			as = append(as, s.Name)
		}
		fmt.Fprintf(&b, "# %s: %s\n", p.kind.Name, strings.Join(as, ", "))
	}
	for _, p := range parts {
		for _, s := range p.Services {
			if s.Profile != "" {
				fmt.Fprintf(&b, "# %s starts only when asked: docker-compose --profile %s up -d (its image is not\n# an official one: build it with make images, or set %s)\n",
					s.Name, s.Profile, composeImageVar(p.kind.Name))
			}
		}
	}
	b.WriteString("# Format 2.4: read by Debian's docker-compose 1.29 and by Compose v2.\nversion: \"2.4\"\n\nservices:\n")
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, s := range p.Services {
			writeService(&b, s)
		}
	}
	return b.String()
}

// writeService writes one service.
func writeService(b *strings.Builder, s cluster.ComposeService) {
	fmt.Fprintf(b, "  %s:\n    container_name: %s\n    image: %s\n    network_mode: host\n    restart: \"no\"\n", s.Name, cluster.ComposeContainer(s.Name), s.Image)
	if s.Profile != "" {
		fmt.Fprintf(b, "    profiles: [%s]\n", composeQuote(s.Profile))
	}
	if len(s.Environment) > 0 {
		keys := make([]string, 0, len(s.Environment))
		for k := range s.Environment {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+": "+composeQuote(s.Environment[k]))
		}
		fmt.Fprintf(b, "    environment: {%s}\n", strings.Join(kv, ", "))
	}
	writeCommand(b, "entrypoint", s.Entrypoint)
	writeCommand(b, "command", s.Command)
	if len(s.DependsOn) > 0 {
		var ds []string
		for _, d := range s.DependsOn {
			ds = append(ds, d+": {condition: service_healthy}")
		}
		fmt.Fprintf(b, "    depends_on: {%s}\n", strings.Join(ds, ", "))
	}
	if len(s.Healthcheck) > 0 {
		retries := s.Retries
		if retries == 0 {
			retries = 30
		}
		fmt.Fprintf(b, "    healthcheck: {test: %s, interval: 1s, timeout: 3s, retries: %d}\n", composeList(s.Healthcheck), retries)
	}
}

// writeCommand writes an entrypoint or command: a flow list, or — when
// an argument spans lines (a script) — a block list with literal blocks.
func writeCommand(b *strings.Builder, key string, args []string) {
	if len(args) == 0 {
		return
	}
	multi := false
	for _, a := range args {
		multi = multi || strings.Contains(a, "\n")
	}
	if !multi {
		fmt.Fprintf(b, "    %s: %s\n", key, composeList(args))
		return
	}
	fmt.Fprintf(b, "    %s:\n", key)
	for _, a := range args {
		if !strings.Contains(a, "\n") {
			fmt.Fprintf(b, "      - %s\n", composeQuote(a))
			continue
		}
		b.WriteString("      - |\n")
		for _, l := range strings.Split(strings.TrimSuffix(composeEscape(a), "\n"), "\n") {
			fmt.Fprintf(b, "        %s\n", l)
		}
	}
}

// composeList is a flow list of quoted, escaped strings.
func composeList(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = composeQuote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// composeQuote is s escaped for docker-compose ($ as $$) and quoted for
// YAML (a JSON string is a YAML double-quoted one).
func composeQuote(s string) string { return strconv.Quote(composeEscape(s)) }

// composeEscape keeps docker-compose from interpolating s.
func composeEscape(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// writeComposeServers is compose.servers.yaml.
func writeComposeServers(parts []composePart) string {
	var b strings.Builder
	b.WriteString("# Written by `locktorture compose` with docker-compose.yml: do not edit.\n" +
		"# Points `locktorture run --servers external --servers-file compose.servers.yaml`\n" +
		"# at the cluster docker-compose.yml brings up (docker-compose up -d). Every\n" +
		"# server names its container (control: docker), so server faults — kill,\n" +
		"# server-pause, failover — reach it through docker.\n")
	for _, p := range parts {
		kinds := make([]string, 0, len(p.Servers))
		for k := range p.Servers {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			es := p.Servers[k]
			kk, _ := cluster.LookupKind(k)
			if _, dsn := kk.Abilities.(cluster.DSNAddressed); dsn && len(es) == 1 {
				fmt.Fprintf(&b, "%s: %s\n", k, entryFlow(es[0], "dsn"))
				continue
			}
			fmt.Fprintf(&b, "%s:\n", k)
			for _, e := range es {
				fmt.Fprintf(&b, "  - %s\n", entryFlow(e, "addr"))
			}
		}
		if s := p.Sentinel; s != nil {
			fmt.Fprintf(&b, "%s:\n  master: %s\n  addrs:\n", cluster.SentinelKind, s.Master)
			for _, e := range s.Addrs {
				fmt.Fprintf(&b, "    - %s\n", entryFlow(e, "addr"))
			}
			if len(s.Servers) > 0 {
				b.WriteString("  servers:                   # the group's primary, then its replica\n")
				for _, e := range s.Servers {
					fmt.Fprintf(&b, "    - %s\n", entryFlow(e, "addr"))
				}
			}
		}
	}
	return b.String()
}

// entryFlow is one servers file entry as a flow mapping.
func entryFlow(e cluster.ServerEntry, key string) string {
	addr := e.Addr
	if strings.ContainsAny(addr, "?#,{}[]&*!|>'\"%@`") {
		addr = strconv.Quote(addr)
	}
	return fmt.Sprintf("{%s: %s, control: %s, container: %s}", key, addr, e.Control, e.Container)
}
