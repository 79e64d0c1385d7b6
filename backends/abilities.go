package backends

import "slices"

// What a backend can do, as a scenario file's suits.needs names it: each
// is said by the backend's Info at its registration.
const (
	// AbilityFencing: its grants carry fencing tokens (Info.Fencing).
	AbilityFencing = "fencing"
	// AbilityLease: its grants carry a lease (Info.Lease).
	AbilityLease = "lease"
	// AbilitySentinel: it runs over a Sentinel group (Info.Sentinel).
	AbilitySentinel = "sentinel"
	// AbilityInTx: its grant is a transaction the resource acts inside
	// (Info.InTx).
	AbilityInTx = "in-tx"
	// AbilityLockFree: it takes no lock at all (Info.LockFree).
	AbilityLockFree = "lock-free"
	// AbilityQuorum: it needs more than one server of a kind, and a
	// majority of them to grant (Info.Counts: Redlock's five).
	AbilityQuorum = "quorum"
)

// Abilities lists every ability a scenario can ask for, sorted.
func Abilities() []string {
	return []string{AbilityFencing, AbilityInTx, AbilityLease, AbilityLockFree, AbilityQuorum, AbilitySentinel}
}

// Abilities are what the backend can do (see Abilities), sorted.
func (i Info) Abilities() []string {
	var out []string
	add := func(ok bool, a string) {
		if ok {
			out = append(out, a)
		}
	}
	add(i.Fencing, AbilityFencing)
	add(i.InTx, AbilityInTx)
	add(i.Lease, AbilityLease)
	add(i.LockFree, AbilityLockFree)
	quorum := false
	for _, n := range i.Counts {
		quorum = quorum || n > 1
	}
	add(quorum, AbilityQuorum)
	add(i.Sentinel, AbilitySentinel)
	return out
}

// Suits reports whether the backend runs on servers of the given kinds
// only (at least one server: kinds empty asks nothing of them) and has
// every ability needs names.
func (i Info) Suits(kinds, needs []string) bool {
	if len(kinds) > 0 {
		if len(i.Kinds) == 0 {
			return false
		}
		for _, k := range i.Kinds {
			if !slices.Contains(kinds, k) {
				return false
			}
		}
	}
	have := i.Abilities()
	for _, a := range needs {
		if !slices.Contains(have, a) {
			return false
		}
	}
	return true
}
