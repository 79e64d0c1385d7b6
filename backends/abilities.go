package backends

import "slices"

// What a backend can do, as a scenario file's suits.needs names it: each
// is said by the backend's Info at its registration.
const (
	// abilityFencing: its grants carry fencing tokens (Info.Fencing).
	abilityFencing = "fencing"
	// abilityLease: its grants carry a lease (Info.Lease).
	abilityLease = "lease"
	// abilitySentinel: it runs over a Sentinel group (Info.Sentinel).
	abilitySentinel = "sentinel"
	// abilityInTx: its grant is a transaction the resource acts inside
	// (Info.InTx).
	abilityInTx = "in-tx"
	// abilityLockFree: it takes no lock at all (Info.LockFree).
	abilityLockFree = "lock-free"
	// abilityQuorum: it needs more than one server of a kind, and a
	// majority of them to grant (Info.Counts: Redlock's five).
	abilityQuorum = "quorum"
	// abilityRenews: its lock lives on while a renewal runs — a watchdog,
	// a lease keepalive, a session (Info.Renews or Info.RenewsItself).
	abilityRenews = "renews"
)

// AbilityInTx is the ability of a backend whose grant is a transaction
// the resource acts inside (suits.needs: in-tx; Info.InTx).
const AbilityInTx = abilityInTx

// Abilities lists every ability a scenario can ask for, sorted.
func Abilities() []string {
	return []string{abilityFencing, abilityInTx, abilityLease, abilityLockFree, abilityQuorum, abilityRenews, abilitySentinel}
}

// abilities are what the backend can do (see Abilities), sorted.
func (i Info) abilities() []string {
	var out []string
	add := func(ok bool, a string) {
		if ok {
			out = append(out, a)
		}
	}
	add(i.Fencing, abilityFencing)
	add(i.InTx, abilityInTx)
	add(i.Lease, abilityLease)
	add(i.LockFree, abilityLockFree)
	quorum := false
	for _, n := range i.Counts {
		quorum = quorum || n > 1
	}
	add(quorum, abilityQuorum)
	add(i.Renews || i.RenewsItself, abilityRenews)
	add(i.Sentinel, abilitySentinel)
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
	have := i.abilities()
	for _, a := range needs {
		if !slices.Contains(have, a) {
			return false
		}
	}
	return true
}
