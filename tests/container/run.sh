#!/usr/bin/env bash
# Which command containment does GOAT get inside a Docker container, and what
# holds there? Runs tests/container/probe.sh (real run_command calls) and
# steps.py (the view's kernel steps, without GOAT) in containers started with
# each setting below, as root and as uid 1000. docs/harness.md has the
# results and what they mean.
#
#   tests/container/run.sh [GOAT_BINARY] [IMAGE]
#
# With MOBY_SECCOMP_PROFILE=FILE, also with that seccomp profile (a newer
# Docker's default, saved from moby's profiles/seccomp/default.json).
#
# Needs a running Docker daemon and an image with sh, git, python3 and a
# user 1000. Where nothing can be pulled, one can be made from Debian's
# packages:
#
#   debootstrap --variant=minbase bookworm /tmp/rootfs
#   chroot /tmp/rootfs sh -c 'apt-get update && apt-get install -y --no-install-recommends python3 git && useradd -m -u 1000 agent'
#   tar -C /tmp/rootfs -c . | docker import - goat-harness-test:bookworm
#
# GOAT_BINARY (default target/debug/goat) must run on the image's libc.
# Not part of CI: it needs a daemon and takes about ten minutes. Skips
# (exit 0) when there is no daemon or no image.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
goat=$(realpath "${1:-$here/../../target/debug/goat}")
image=${2:-goat-harness-test:bookworm}

if ! docker info >/dev/null 2>&1; then
    echo "skipped: no Docker daemon answers"
    exit 0
fi
if ! docker image inspect "$image" >/dev/null 2>&1; then
    echo "skipped: no image $image (see the header of this script)"
    exit 0
fi

# The binary goes outside /usr and /etc: a bind mount there would itself
# change what GOAT can bind (docs/harness.md, "Containment").
base=(docker run --rm --network none
    -v "$goat:/goat-bin/goat:ro" -v "$here:/probe:ro"
    -e PATH=/goat-bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    --tmpfs /ws:mode=1777 -e GOAT_COMMANDS_LAYERS_DIR=/ws/layers)

# --privileged asks for every capability; where the daemon itself lacks one
# (a VM that withholds CAP_SYS_RESOURCE), runc refuses to start the
# container. Then the same is asked for piece by piece.
privileged=(--privileged)
if ! docker run --rm --privileged "$image" true >/dev/null 2>&1; then
    echo "note: --privileged cannot start a container here; using its parts instead"
    privileged=(--cap-add ALL --cap-drop SYS_RESOURCE --security-opt seccomp=unconfined
        --security-opt systempaths=unconfined)
fi

settings=(
    "default|"
    "seccomp=unconfined|--security-opt seccomp=unconfined"
    "cap-add SYS_ADMIN|--cap-add SYS_ADMIN"
    "seccomp=unconfined, systempaths=unconfined, tmpfs /tmp|--security-opt seccomp=unconfined --security-opt systempaths=unconfined --tmpfs /tmp"
    "privileged|${privileged[*]}"
    "privileged, tmpfs /tmp|${privileged[*]} --tmpfs /tmp"
)
# A newer daemon's default profile, tried on this one: moby's
# profiles/seccomp/default.json saved to a file.
if [ -n "${MOBY_SECCOMP_PROFILE:-}" ]; then
    settings+=("seccomp=$(basename "$MOBY_SECCOMP_PROFILE")|--security-opt seccomp=$(realpath "$MOBY_SECCOMP_PROFILE")")
fi

for s in "${settings[@]}"; do
    name=${s%%|*}
    read -r -a opts <<<"${s#*|}"
    printf '\n===== %s (%s)\n' "$name" "${opts[*]:-no flags}"
    echo "--- the view's steps, as root"
    "${base[@]}" "${opts[@]}" "$image" python3 /probe/steps.py
    echo "--- the view's steps, as uid 1000"
    "${base[@]}" "${opts[@]}" --user 1000 "$image" python3 /probe/steps.py
    echo "--- probe as root"
    "${base[@]}" "${opts[@]}" "$image" /probe/probe.sh /ws/app
    echo "--- probe as uid 1000"
    "${base[@]}" "${opts[@]}" --user 1000 -e HOME=/ws/home "$image" /probe/probe.sh /ws/app
done

# What the view would give if GOAT could bind /etc with Docker's three files
# mounted in it: they are unmounted first (root with CAP_SYS_ADMIN can), so
# the rest of the view's requirements are measured on their own.
printf '\n===== privileged, tmpfs /tmp, /etc/hosts, hostname, resolv.conf unmounted\n'
unmount='umount /etc/hosts /etc/hostname /etc/resolv.conf'
echo "--- probe as root"
"${base[@]}" "${privileged[@]}" --tmpfs /tmp "$image" sh -c "$unmount && /probe/probe.sh /ws/app"
echo "--- probe as uid 1000"
"${base[@]}" "${privileged[@]}" --tmpfs /tmp "$image" sh -c \
    "$unmount && mkdir -p /ws/home && chown 1000:1000 /ws/home && HOME=/ws/home setpriv --reuid 1000 --regid 1000 --clear-groups /probe/probe.sh /ws/app"
echo "--- the workspace in the image's own filesystem (/app, overlayfs), as root"
"${base[@]}" "${privileged[@]}" --tmpfs /tmp "$image" sh -c \
    "$unmount && mkdir -p /app && cd /app && env -u GOAT_COMMANDS_LAYERS_DIR goat tools call run_command '{\"command\": \"echo hi > f\"}' --allow-commands"
