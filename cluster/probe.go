package cluster

import (
	"context"
	"fmt"
	"sync"

	"github.com/locktorture/locktorture/cluster/local"
)

// ImageProber answers whether an image has a program on its PATH (a mode
// whose servers run from images registers one: RegisterImageProber).
type ImageProber func(ctx context.Context, ref, program string) (bool, error)

var (
	probersMu sync.Mutex
	probers   = map[string]ImageProber{}
	probed    = map[[2]string]bool{} // {ref, program} -> has it
)

// RegisterImageProber makes ProgramMissing look into the images of mode.
func RegisterImageProber(mode string, f ImageProber) {
	probersMu.Lock()
	defer probersMu.Unlock()
	probers[mode] = f
}

// ProgramMissing says, in one line, why servers of kind started in mode
// (with images, in docker mode) would not find program — the Debian
// package pkg is not installed here, or the kind's image lacks it — or ""
// when they would (or when it cannot be told: the run then says). An
// image's answer is kept for the life of the process.
func ProgramMissing(ctx context.Context, mode string, images map[string]string, kind, program, pkg string) string {
	switch mode {
	case "", ServersLocal:
		if _, err := local.LookBin(program, pkg, "/usr/sbin"); err != nil {
			return fmt.Sprintf("%s is not installed here (Debian package %s)", program, pkg)
		}
		return ""
	case ServersExternal:
		return ""
	}
	probersMu.Lock()
	f := probers[mode]
	probersMu.Unlock()
	def, _ := LookupKind(kind)
	ref := ResolveImage(images, kind, def.Image)
	if f == nil || ref == "" {
		return ""
	}
	key := [2]string{ref, program}
	probersMu.Lock()
	has, done := probed[key]
	probersMu.Unlock()
	if !done {
		var err error
		if has, err = f(ctx, ref, program); err != nil {
			return "" // the run itself says what is wrong with the image
		}
		probersMu.Lock()
		probed[key] = has
		probersMu.Unlock()
	}
	if !has {
		return fmt.Sprintf("the %s image %s has no %s (Debian package %s)", kind, ref, program, pkg)
	}
	return ""
}
