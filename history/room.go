package history

// MakeOps returns an empty slice with room for n ops, whose whole huge
// pages Linux is asked to back with huge pages (see adviseHugePages):
// filling a hundred thousand fresh ops (13.6 MB) then takes a handful of
// page faults, not 3,300, which cost more than the copying itself.
func MakeOps(n int) []Op {
	ops := make([]Op, n)
	adviseHugePages(ops)
	return ops[:0]
}
