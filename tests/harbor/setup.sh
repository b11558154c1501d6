#!/usr/bin/env bash
# What `harbor run` with Docker needs here, from the registries only, cached
# outside the repository (issue 40):
#
# 1. a Docker daemon: Debian's docker.io, started if none answers (as root);
# 2. `docker compose` (Compose v2, which Harbor calls): Debian 13's
#    docker-compose package, whose one static binary is kept in the cache and
#    linked into ~/.docker/cli-plugins (Debian 12 has only Compose v1);
# 3. the base image the task set builds FROM, goat-harbor-base:bookworm: no
#    image can be pulled here, so it is made with debootstrap from Debian's
#    packages once, kept as a tarball in the cache, and imported when the
#    daemon lacks it.
#
# Prints what it did; exits 0 when all three are there, 1 with a note when
# one cannot be had (the test then skips). Started daemons are left running
# for the tests; their pid is in $GOAT_DOCKERD_PID_FILE when given.
set -uo pipefail
CACHE="${GOAT_DOCKER_CACHE:-$HOME/.cache/goat/docker}"
IMAGE=goat-harbor-base:bookworm
TARBALL="$CACHE/goat-harbor-base-bookworm.tar"
LOG="${TMPDIR:-/tmp}/goat-harbor-setup.log"
mkdir -p "$CACHE"
: > "$LOG"

note() { echo "note: $*"; exit 1; }

apt_install() {
  [ "$(id -u)" = 0 ] || return 1
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"; } >> "$LOG" 2>&1
}

# 1. The daemon.
if ! docker info > /dev/null 2>&1; then
  if ! command -v dockerd > /dev/null; then
    apt_install docker.io || note "no Docker daemon and docker.io could not be installed (log: $LOG)"
  fi
  [ "$(id -u)" = 0 ] || note "no Docker daemon answers, and only root starts one here"
  dockerd > "${TMPDIR:-/tmp}/goat-dockerd.log" 2>&1 &
  echo $! > "${GOAT_DOCKERD_PID_FILE:-/dev/null}"
  for _ in $(seq 60); do
    docker info > /dev/null 2>&1 && break
    sleep 0.5
  done
  docker info > /dev/null 2>&1 || note "dockerd did not start (log: ${TMPDIR:-/tmp}/goat-dockerd.log)"
  echo "started dockerd $(docker info --format '{{.ServerVersion}}')"
fi

# 2. Compose v2.
if ! docker compose version > /dev/null 2>&1; then
  if [ ! -x "$CACHE/docker-compose" ]; then
    work=$(mktemp -d)
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
    echo "deb http://deb.debian.org/debian trixie main" > "$work/sources.list"
    # Its own lists and cache: the system's apt state is not touched.
    apt=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
    if (cd "$work" && apt-get "${apt[@]}" update && apt-get "${apt[@]}" download docker-compose) >> "$LOG" 2>&1 \
      && dpkg-deb -x "$work"/docker-compose_*.deb "$work/x" \
      && install -m 755 "$work/x/usr/libexec/docker/cli-plugins/docker-compose" "$CACHE/docker-compose"; then
      echo "fetched docker compose ($(basename "$work"/docker-compose_*.deb), Debian trixie's package)"
    fi
    rm -rf "$work"
  fi
  [ -x "$CACHE/docker-compose" ] || note "docker compose could not be had (log: $LOG)"
  mkdir -p "$HOME/.docker/cli-plugins"
  ln -sf "$CACHE/docker-compose" "$HOME/.docker/cli-plugins/docker-compose"
  docker compose version > /dev/null 2>&1 || note "docker compose does not run (log: $LOG)"
fi

# 3. The base image.
if ! docker image inspect "$IMAGE" > /dev/null 2>&1; then
  if [ ! -f "$TARBALL" ]; then
    command -v debootstrap > /dev/null || apt_install debootstrap \
      || note "debootstrap could not be installed (log: $LOG)"
    root=$(mktemp -d)
    started=$SECONDS
    if ! debootstrap --variant=minbase --include=git,ca-certificates bookworm "$root" \
      http://deb.debian.org/debian >> "$LOG" 2>&1; then
      rm -rf "$root"
      note "debootstrap failed (log: $LOG)"
    fi
    chroot "$root" sh -c 'apt-get clean; rm -rf /var/lib/apt/lists/*'
    tar -C "$root" -c . > "$TARBALL.part" && mv "$TARBALL.part" "$TARBALL"
    rm -rf "$root"
    echo "made the base image's root file system in $((SECONDS - started)) s"
  fi
  docker import "$TARBALL" "$IMAGE" >> "$LOG" 2>&1 || note "docker import failed (log: $LOG)"
fi
echo "docker $(docker info --format '{{.ServerVersion}}'), $(docker compose version --short), image $IMAGE"
