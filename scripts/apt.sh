# Sourced by scripts/deps.sh and scripts/images.sh: apt_get runs apt-get
# (with $sudo, when set) holding a lock of ours, so that make test's deps
# and image build, which run side by side, take turns with apt on this
# machine rather than one failing on dpkg's lock.
# The lock file stays, empty, where lock files live (/run/lock, cleared at
# boot), as flock's files do.
apt_get() {
  local dir=/run/lock
  [ -d "$dir" ] && [ -w "$dir" ] || dir=${TMPDIR:-/tmp}
  if command -v flock >/dev/null 2>&1; then
    flock "$dir/locktorture-apt.lock" ${sudo:-} apt-get "$@"
  else
    ${sudo:-} apt-get "$@"
  fi
}
