package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one server process that can be paused, killed and started again
// with the same arguments.
type proc struct {
	name    string
	bin     string
	args    []string
	dir     string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	log    *os.File
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	if p.log == nil {
		f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("%s: log: %w", p.name, err)
		}
		p.log = f
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.dir
	cmd.Stdout = p.log
	cmd.Stderr = p.log
	// Own process group (a terminal's Ctrl-C reaches only the harness, which
	// stops servers in order) and killed with the harness if it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStart, p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	p.cmd, p.exited, p.paused = cmd, exited, false
	return nil
}

// running reports whether the process is up (not exited).
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *proc) exitedCh() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.exited
}

func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return fmt.Errorf("%s: not running", p.name)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: %v: %w", p.name, sig, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	p.mu.Lock()
	p.cmd, p.paused = nil, false
	p.mu.Unlock()
	return nil
}

// stop ends the process politely (SIGCONT, SIGTERM), then by force after a
// grace period, and closes its log.
func (p *proc) stop() error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	var err error
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
		p.mu.Lock()
		p.cmd, p.paused = nil, false
		p.mu.Unlock()
	}
	p.mu.Lock()
	if p.log != nil {
		if cerr := p.log.Close(); cerr != nil && !errors.Is(cerr, os.ErrClosed) {
			err = cerr
		}
		p.log = nil
	}
	p.mu.Unlock()
	return err
}

// waitReady polls ready until it succeeds, the process exits, or ctx ends.
func (p *proc) waitReady(ctx context.Context, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-p.exitedCh():
			return fmt.Errorf("%w: %s exited during start-up (see %s): %w", ErrStart, p.name, p.logPath, last)
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not ready (see %s): %w", ErrStart, p.name, p.logPath, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
