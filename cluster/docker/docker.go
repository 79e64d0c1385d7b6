// Package docker runs a cluster's servers in containers, through
// testcontainers-go: one container per server, on a bridge network of the
// run's own with a fixed address per server (a killed server starts again
// on the same address), each started with the same command line as a
// local process. Importing the package makes `servers: docker` available
// (provider.Register); the cluster package itself does not depend
// on a container library.
//
// No registry is assumed: an image missing on this machine stops the run
// with one line saying how to get it (docker pull, or make images). Every
// container and network carries labels naming the run, its owner process
// and the host; Close removes them, and a new provider removes those whose
// owner is gone (a harness killed with SIGKILL). Ryuk, testcontainers'
// reaper, runs as a second net only when its image is already on this
// machine (it is never pulled), unless TESTCONTAINERS_RYUK_DISABLED says.
package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/provider"
	"github.com/locktorture/locktorture/internal/owner"
)

// The labels every container and network of a run carries.
const (
	// labelRun names the run (a random id per provider).
	labelRun = "org.locktorture.run"
	// LabelOwner names the owner process: "pid starttime" (owner.ID).
	LabelOwner = "org.locktorture.owner"
	// LabelHost names the machine the owner runs on (its hostname): only
	// orphans of this machine's harnesses are swept.
	LabelHost = "org.locktorture.host"
)

// LocalImage is the image `make images` builds from Debian's packages,
// with every server in it.
const LocalImage = "locktorture-servers:bookworm"

// Sentinel errors of this package.
var (
	// errNoEngine is wrapped when no Docker engine answers.
	errNoEngine = errors.New("no Docker engine answers")
	// ErrImageMissing is wrapped when an image is not on this machine.
	ErrImageMissing = errors.New("image missing")
	// ErrNoReaper is wrapped when testcontainers' reaper is asked for
	// (TESTCONTAINERS_RYUK_DISABLED=false) but its image is not here.
	ErrNoReaper = errors.New("the reaper's image is missing")
)

func init() {
	provider.Register(provider.Docker, newProvider)
	cluster.RegisterSweeper(sweepAny)
}

// sweepAny is sweep for a run of any mode: when a Docker engine answers
// (within 2s), it removes what killed harnesses of this host left there.
func sweepAny(ctx context.Context) []string {
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return nil
	}
	host, _ := os.Hostname()
	return sweep(ctx, cli, host)
}

// containerProvider runs servers in containers on a network of its own.
type containerProvider struct {
	cli    *testcontainers.DockerClient
	run    string
	labels map[string]string
	images map[string]string
	logDir string

	mu       sync.Mutex
	netName  string
	netID    string
	subnet   netip.Prefix
	gateway  netip.Addr
	next     netip.Addr
	hosts    map[string]netip.Addr
	checked  map[string]error // image reference -> its check
	used     map[string]string
	units    []*unit
	closed   bool
	closeErr error
}

// newProvider connects to the Docker engine, removes what dead harnesses of this
// machine left behind, and makes the run's network.
func newProvider(ctx context.Context, opt provider.Options) (provider.Provider, error) {
	if err := cluster.CheckImages(opt.Images); err != nil {
		return nil, err
	}
	tclog.SetDefault(tclog.NewNoopLogger())
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		// Ryuk is a second net where its image is at hand; it is never
		// pulled (the labels and sweep are the first net).
		disabled := "true"
		if ryukAtHand(ctx) {
			disabled = "false"
		}
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", disabled)
	} else if off, err := strconv.ParseBool(os.Getenv("TESTCONTAINERS_RYUK_DISABLED")); err == nil && !off && !ryukAtHand(ctx) {
		// Asked for, the reaper would be pulled, and a failed pull would
		// be blamed on the first server started.
		return nil, fmt.Errorf("%w: TESTCONTAINERS_RYUK_DISABLED=false asks for testcontainers' reaper, but its image %s is not on this machine (nothing is pulled): load it (docker load), or unset the variable (the run's labels and the next run's sweep remove what a killed run leaves)", ErrNoReaper, RyukImage)
	}
	// DOCKER_HOST, when set, is the engine to use, and no other: the
	// library would otherwise fall back to the default socket.
	var opts []client.Opt
	if os.Getenv("DOCKER_HOST") != "" {
		opts = append(opts, client.FromEnv)
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx, opts...)
	if err == nil {
		_, err = cli.Ping(ctx, client.PingOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("%w (%w): start it, or run with servers: local", errNoEngine, err)
	}
	ownerID, err := owner.ID()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	p := &containerProvider{
		cli: cli, run: hex.EncodeToString(b[:]), images: opt.Images, logDir: opt.LogDir,
		hosts: map[string]netip.Addr{}, checked: map[string]error{}, used: map[string]string{},
	}
	// testcontainers' own labels (its session) let Ryuk, when it runs,
	// reap the network too.
	p.labels = testcontainers.GenericLabels()
	for k, v := range map[string]string{labelRun: p.run, LabelOwner: ownerID, LabelHost: host} {
		p.labels[k] = v
	}
	sweep(ctx, cli.Client, host)
	if err := p.makeNetwork(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Mode is "docker".
func (p *containerProvider) Mode() string { return provider.Docker }

// Run is the run's id, in its containers' and network's names and labels.
func (p *containerProvider) Run() string { return p.run }

// Host gives each server name a fixed address on the run's network.
func (p *containerProvider) Host(_ context.Context, name string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.hosts[name]; ok {
		return a.String(), nil
	}
	a := p.next
	if !p.subnet.Contains(a) {
		return "", fmt.Errorf("docker: network %s has no address left for %s", p.netName, name)
	}
	p.next = a.Next()
	p.hosts[name] = a
	return a.String(), nil
}

// Port is the kind's usual port: each server has its own address.
func (p *containerProvider) Port(usual int) (int, error) { return usual, nil }

// Dir is /tmp inside the server's container (every image has one, writable
// by every user).
func (p *containerProvider) Dir(string) (string, error) { return "/tmp", nil }

// HarnessHost is the network's gateway: this machine, as containers see it.
func (p *containerProvider) HarnessHost() string { return p.gateway.String() }

// Program is the program's name: the image has it on its PATH.
func (p *containerProvider) Program(name, _ string, _ ...string) (string, error) { return name, nil }

// Images names the image each kind of server ran from.
func (p *containerProvider) Images() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.used))
	for k, v := range p.used {
		out[k] = v
	}
	return out
}

// image is the reference for kind, checked to be on this machine.
func (p *containerProvider) image(ctx context.Context, kind string) (string, error) {
	def, _ := cluster.LookupKind(kind) // its Image: the official one
	ref := cluster.ResolveImage(p.images, kind, def.Image)
	if ref == "" {
		return "", fmt.Errorf("docker: no image for servers of kind %q: name one with --image %s=REF", kind, kind)
	}
	p.mu.Lock()
	err, done := p.checked[ref]
	p.mu.Unlock()
	if !done {
		_, err = p.cli.ImageInspect(ctx, ref)
		if errdefs.IsNotFound(err) {
			err = fmt.Errorf("%w: %s (for %s) is not on this machine, and locktorture pulls nothing: docker pull %s, or build %s from Debian's packages (make images) and run with --image all=%s",
				ErrImageMissing, ref, kind, ref, LocalImage, LocalImage)
		} else if err != nil {
			err = fmt.Errorf("docker: image %s: %w", ref, err)
		}
		p.mu.Lock()
		p.checked[ref] = err
		p.mu.Unlock()
	}
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.used[kind] = ref
	p.mu.Unlock()
	return ref, nil
}

// Launch creates the server's container (not started) from its kind's
// image, with its command line, files, user and fixed address.
func (p *containerProvider) Launch(ctx context.Context, s provider.Spec) (provider.Unit, error) {
	ref, err := p.image(ctx, s.Kind)
	if err != nil {
		return nil, err
	}
	ip, err := p.Host(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	addr, _ := netip.ParseAddr(ip)
	entry, cmd := []string{s.Program}, s.Args
	if s.Shell != "" {
		entry, cmd = []string{"/bin/sh", "-c", s.Shell, "sh"}, append([]string{s.Program}, s.Args...)
	}
	var files []testcontainers.ContainerFile
	for _, f := range s.Files {
		mode := int64(f.Mode)
		if mode == 0 {
			mode = 0o644
		}
		files = append(files, testcontainers.ContainerFile{Reader: bytes.NewReader(f.Content), ContainerFilePath: f.Path, FileMode: mode})
	}
	stop := s.StopSignal
	if stop == 0 {
		stop = syscall.SIGTERM
	}
	labels := map[string]string{}
	for k, v := range p.labels {
		labels[k] = v
	}
	name := "locktorture-" + p.run + "-" + s.Name
	onNetwork := func(r *testcontainers.ContainerRequest) {
		r.Networks = []string{p.netName}
		r.EndpointSettingsModifier = func(eps map[string]*network.EndpointSettings) {
			ep := eps[p.netName]
			if ep == nil {
				ep = &network.EndpointSettings{}
				eps[p.netName] = ep
			}
			ep.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: addr}
		}
	}
	// The address belongs to a sandbox container that only sleeps, and the
	// server's container joins its network namespace (as a pod's do): a
	// killed server's address then refuses connections at once, as a
	// local port does, instead of going silent until its restart (a
	// proxy's dial would hang seconds, and a restart "at once" would not
	// be). An image without sleep gets the address itself.
	sandbox, serr := p.sandbox(ctx, ref, name+"-net", labels, onNetwork)
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:      ref,
			Name:       name,
			Entrypoint: entry,
			Cmd:        cmd,
			Labels:     labels,
			Files:      files,
			ConfigModifier: func(c *container.Config) {
				c.User = s.User
				if sandbox == "" {
					c.Hostname = s.Name
				}
				c.StopSignal = unixSignalName(stop)
			},
		},
		Started: false,
		Logger:  tclog.NewNoopLogger(),
	}
	if serr == nil {
		req.HostConfigModifier = func(hc *container.HostConfig) { hc.NetworkMode = container.NetworkMode("container:" + sandbox) }
	} else {
		onNetwork(&req.ContainerRequest)
	}
	c, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		if c != nil {
			_ = p.remove(context.WithoutCancel(ctx), c.GetContainerID())
		}
		if sandbox != "" {
			_ = p.remove(context.WithoutCancel(ctx), sandbox)
		}
		return nil, fmt.Errorf("%w: %s: create a container from %s: %w", cluster.ErrStart, s.Name, ref, err)
	}
	u := &unit{p: p, id: c.GetContainerID(), sandbox: sandbox, name: s.Name, logPath: s.LogPath}
	p.mu.Lock()
	p.units = append(p.units, u)
	p.mu.Unlock()
	return u, nil
}

// Close removes the run's containers that are left (the cluster stops its
// units first) and its network.
func (p *containerProvider) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return p.closeErr
	}
	p.closed = true
	units := p.units
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var errs []error
	for _, u := range units {
		if err := u.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// Whatever else carries the run's label (a create that failed half-way).
	f := make(client.Filters).Add("label", labelRun+"="+p.run)
	if cs, err := p.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f}); err == nil {
		for _, c := range cs.Items {
			if err := p.remove(ctx, c.ID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if p.netID != "" {
		if _, err := p.cli.NetworkRemove(ctx, p.netID, client.NetworkRemoveOptions{}); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("docker: remove network %s: %w", p.netName, err))
		}
	}
	_ = p.cli.Close()
	p.closeErr = errors.Join(errs...)
	return p.closeErr
}

// remove removes a container, running or not.
func (p *containerProvider) remove(ctx context.Context, id string) error {
	_, err := p.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("docker: remove container %.12s: %w", id, err)
	}
	return nil
}

// unit is one server's container.
type unit struct {
	p       *containerProvider
	id      string
	sandbox string // the container holding its address ("" if none)
	name    string
	logPath string

	mu      sync.Mutex
	exited  chan struct{} // of the current start; nil before the first
	ending  bool
	removed bool
	onDeath func(name, logPath string)
	logMu   sync.Mutex
}

// Start starts the container (again, after Kill: same address, same
// filesystem) and watches for its exit.
func (u *unit) Start(ctx context.Context) error {
	u.mu.Lock()
	if u.removed {
		u.mu.Unlock()
		return fmt.Errorf("%s: container removed", u.name)
	}
	if u.exited != nil {
		select {
		case <-u.exited:
		default:
			u.mu.Unlock()
			return fmt.Errorf("%s: already running", u.name)
		}
	}
	u.ending = false
	u.mu.Unlock()
	if _, err := u.p.cli.ContainerStart(ctx, u.id, client.ContainerStartOptions{}); err != nil {
		u.flushLog()
		return fmt.Errorf("%w: %s: %w", cluster.ErrStart, u.name, err)
	}
	exited := make(chan struct{})
	// The wait is registered before Start returns, so an exit right after
	// the start is seen.
	w := u.p.cli.ContainerWait(context.Background(), u.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	u.mu.Lock()
	u.exited = exited
	u.mu.Unlock()
	go func() {
		select {
		case <-w.Result:
		case <-w.Error:
		}
		u.flushLog()
		u.mu.Lock()
		unexpected, onDeath := !u.ending, u.onDeath
		u.mu.Unlock()
		if unexpected && onDeath != nil {
			onDeath(u.name, u.logPath)
		}
		close(exited)
	}()
	return nil
}

// Pause freezes every process of the container (the cgroup freezer).
func (u *unit) Pause(ctx context.Context) error {
	if _, err := u.p.cli.ContainerPause(ctx, u.id, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("%s: docker pause: %w", u.name, err)
	}
	return nil
}

// Resume thaws it.
func (u *unit) Resume(ctx context.Context) error {
	if _, err := u.p.cli.ContainerUnpause(ctx, u.id, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("%s: docker unpause: %w", u.name, err)
	}
	return nil
}

// Kill sends SIGKILL (docker kill) and returns once the container has
// stopped. A paused container is thawed after the kill is sent, so it
// dies without running again.
func (u *unit) Kill(ctx context.Context) error {
	u.mu.Lock()
	exited := u.exited
	u.ending = true
	u.mu.Unlock()
	if exited == nil || !u.Running() {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := u.p.cli.ContainerKill(ctx, u.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		if !strings.Contains(err.Error(), "paused") {
			return fmt.Errorf("%s: docker kill: %w", u.name, err)
		}
		// An older engine refuses to kill a paused container: thaw it and
		// kill it at once.
		_, _ = u.p.cli.ContainerUnpause(ctx, u.id, client.ContainerUnpauseOptions{})
		if _, err := u.p.cli.ContainerKill(ctx, u.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			return fmt.Errorf("%s: docker kill: %w", u.name, err)
		}
	}
	<-exited
	return nil
}

// Stop removes the container for good, its log kept in the store.
func (u *unit) Stop(ctx context.Context) error {
	u.mu.Lock()
	if u.removed {
		u.mu.Unlock()
		return nil
	}
	u.removed, u.ending = true, true
	exited := u.exited
	u.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if exited != nil {
		u.flushLog()
	}
	err := u.p.remove(ctx, u.id)
	if u.sandbox != "" {
		err = errors.Join(err, u.p.remove(ctx, u.sandbox))
	}
	if exited != nil {
		select {
		case <-exited:
		case <-ctx.Done():
		}
	}
	return err
}

// Running reports whether the current start has not ended.
func (u *unit) Running() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.exited == nil {
		return false
	}
	select {
	case <-u.exited:
		return false
	default:
		return true
	}
}

// Exited is closed when the current start has ended.
func (u *unit) Exited() <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.exited == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return u.exited
}

// LogPath is the server's log file in the store.
func (u *unit) LogPath() string { return u.logPath }

// OnDeath sets what hears of an exit nobody asked for.
func (u *unit) OnDeath(f func(name, logPath string)) {
	u.mu.Lock()
	u.onDeath = f
	u.mu.Unlock()
}

// flushLog writes the container's whole output (every start's) to the log
// file: on each exit, and before the container is removed.
func (u *unit) flushLog() {
	if u.logPath == "" {
		return
	}
	u.logMu.Lock()
	defer u.logMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := u.p.cli.ContainerLogs(ctx, u.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(&buf, "\n(locktorture: reading the container's log: %v)\n", err)
	}
	_ = os.MkdirAll(filepath.Dir(u.logPath), 0o755)
	_ = os.WriteFile(u.logPath, buf.Bytes(), 0o644)
}

// unixSignalName is a signal as Docker's StopSignal spells it.
func unixSignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return strconv.Itoa(int(s))
}

// RyukImage is the image of testcontainers' reaper (testcontainers-go
// v0.45.0's default).
const RyukImage = "testcontainers/ryuk:0.14.0"

// ryukAtHand reports whether the reaper's image is on this machine.
func ryukAtHand(ctx context.Context) bool {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return false
	}
	defer cli.Close()
	_, err = cli.ImageInspect(ctx, RyukImage)
	return err == nil
}

// sandbox starts a container of image that sleeps holding an address on
// the run's network (net sets it), and returns its id; an error when the
// image cannot sleep (nothing is left then).
func (p *containerProvider) sandbox(ctx context.Context, image, name string, labels map[string]string, net func(*testcontainers.ContainerRequest)) (string, error) {
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:      image,
			Name:       name,
			Entrypoint: []string{"sleep", "infinity"},
			Labels:     labels,
			ConfigModifier: func(c *container.Config) {
				c.User = ""
				c.StopSignal = "SIGKILL"
			},
		},
		Started: true,
		Logger:  tclog.NewNoopLogger(),
	}
	net(&req.ContainerRequest)
	c, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		if c != nil {
			_ = p.remove(context.WithoutCancel(ctx), c.GetContainerID())
		}
		return "", err
	}
	return c.GetContainerID(), nil
}
