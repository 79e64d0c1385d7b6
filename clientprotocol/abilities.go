package clientprotocol

// AbilityExtend is the ability a child announces when it renews its
// leases and sends extend events: the renew families (renew-partition,
// renew-delay) test such a lock.
const AbilityExtend = abilityExtend
