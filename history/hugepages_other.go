//go:build !linux

package history

// adviseHugePages does nothing outside Linux (see hugepages_linux.go).
func adviseHugePages([]Op) {}
