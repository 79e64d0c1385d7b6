package docker

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/owner"
)

// makeNetwork creates the run's bridge network on a /24 of 10.0.0.0/8
// that neither another Docker network nor a route of this machine uses,
// so every server gets a fixed address (kept across a kill and restart)
// that this machine reaches directly.
func (p *containerProvider) makeNetwork(ctx context.Context) error {
	taken := routedPrefixes()
	if nets, err := p.cli.NetworkList(ctx, client.NetworkListOptions{}); err == nil {
		for _, n := range nets.Items {
			for _, c := range n.IPAM.Config {
				if c.Subnet.IsValid() {
					taken = append(taken, c.Subnet)
				}
			}
		}
	}
	name := "locktorture-" + p.run
	var last error
	for range 20 {
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(200 + rand.IntN(50)), byte(rand.IntN(256)), 0}), 24)
		if overlaps(subnet, taken) {
			continue
		}
		gw := subnet.Addr().Next()
		res, err := p.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
			Driver: "bridge",
			IPAM:   &network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet, Gateway: gw}}},
			Labels: p.labels,
		})
		if err != nil {
			last = err
			taken = append(taken, subnet)
			continue
		}
		p.netName, p.netID, p.subnet, p.gateway, p.next = name, res.ID, subnet, gw, gw.Next()
		return nil
	}
	return fmt.Errorf("%w: docker: no free /24 for the run's network under 10.200.0.0/13: %v", cluster.ErrStart, last)
}

func overlaps(p netip.Prefix, taken []netip.Prefix) bool {
	for _, t := range taken {
		if p.Overlaps(t) {
			return true
		}
	}
	return false
}

// routedPrefixes lists the IPv4 destinations of this machine's routes
// (/proc/net/route), default route aside.
func routedPrefixes() []netip.Prefix {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []netip.Prefix
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 {
			continue
		}
		dst, err1 := hex.DecodeString(fs[1])
		mask, err2 := hex.DecodeString(fs[7])
		if err1 != nil || err2 != nil || len(dst) != 4 || len(mask) != 4 {
			continue
		}
		m := binary.LittleEndian.Uint32(mask)
		bits := 0
		for m != 0 {
			bits += int(m & 1)
			m >>= 1
		}
		if bits == 0 {
			continue
		}
		a := netip.AddrFrom4([4]byte{dst[0], dst[1], dst[2], dst[3]})
		out = append(out, netip.PrefixFrom(a, bits).Masked())
	}
	return out
}

// sweep removes the containers and networks that harnesses of this host
// (LabelHost) left behind when they died without cleaning up: those whose
// owner process (LabelOwner) is gone. Best effort; it reports what it
// removed.
func sweep(ctx context.Context, cli *client.Client, host string) (removed []string) {
	f := make(client.Filters).Add("label", LabelOwner).Add("label", LabelHost+"="+host)
	dead := func(labels map[string]string) bool { return !owner.Alive(labels[LabelOwner]) }
	if cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f}); err == nil {
		for _, c := range cs.Items {
			if !dead(c.Labels) {
				continue
			}
			if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err == nil {
				removed = append(removed, "container "+strings.TrimPrefix(firstName(c.Names), "/"))
			}
		}
	}
	if ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err == nil {
		for _, n := range ns.Items {
			if !dead(n.Labels) {
				continue
			}
			if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err == nil {
				removed = append(removed, "network "+n.Name)
			}
		}
	}
	return removed
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
