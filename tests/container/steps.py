#!/usr/bin/env python3
"""The kernel steps a namespace view needs (ADR-0077), tried one by one with
the same system calls GOAT makes, without GOAT: which step a container
refuses, and with what error.

    steps.py [SCRATCH_DIR]

SCRATCH_DIR (default /tmp) is where the overlay's upper directory is made,
as GOAT makes it in commands.layers_dir or the temporary directory. Prints
one `step: ok | error` line per step; a step after a failed one that needs
it is not tried.
"""
import ctypes
import errno
import os
import shutil
import sys
import tempfile

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x20000, 0x10000000, 0x20000000
CLONE_NEWNET, CLONE_NEWIPC = 0x40000000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 1, 2, 4, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18


def call(rc):
    if rc == 0:
        return "ok"
    e = ctypes.get_errno()
    return f"{errno.errorcode.get(e, e)} ({os.strerror(e)})"


def mount(src, dst, fstype, flags, data=None):
    return call(
        libc.mount(
            src.encode() if src else None,
            dst.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
    )


def row(step, result):
    print(f"{step + ':':34} {result}", flush=True)


def main():
    scratch = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    # Everything is made in one directory, removed by this process, which
    # stays in the namespaces it started in (the mounts go with the child's).
    work = tempfile.mkdtemp(prefix="goat-steps-", dir=scratch)
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        # overlayfs leaves its work directory mode 000.
        for top, dirs, _ in os.walk(work):
            for d in dirs:
                os.chmod(os.path.join(top, d), 0o700)
        shutil.rmtree(work, ignore_errors=True)
        return
    try:
        steps(work, scratch)
    finally:
        os._exit(0)


def steps(work, scratch):
    uid, gid = os.getuid(), os.getgid()
    r = call(libc.unshare(CLONE_NEWUSER))
    row("unshare(CLONE_NEWUSER)", r)
    if r != "ok":
        return
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")
    r = call(libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC))
    row("unshare(mount, PID, net, IPC)", r)
    if r != "ok":
        return
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    # PID 1 of the new namespace, as GOAT's second child is.
    row("make / private", mount(None, "/", None, MS_REC | MS_PRIVATE))
    root = f"{work}/root"
    os.makedirs(root)
    row(f"tmpfs root (in {scratch})", mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"))
    for d in ("usr", "etc"):
        os.makedirs(f"{root}/{d}", exist_ok=True)
        row(f"bind /{d} (not recursive)", mount(f"/{d}", f"{root}/{d}", None, MS_BIND))
    os.makedirs(f"{root}/etc-rec", exist_ok=True)
    row("bind /etc recursive", mount("/etc", f"{root}/etc-rec", None, MS_BIND | MS_REC))
    # The overlay: upper and work beside each other in the scratch directory.
    layer = f"{work}/layer"
    for d in ("lower", "upper", "work", "merged"):
        os.makedirs(f"{layer}/{d}")
    opts = f"lowerdir={layer}/lower,upperdir={layer}/upper,workdir={layer}/work,userxattr"
    row(f"overlay, upper in {scratch}", mount("overlay", f"{layer}/merged", "overlay", 0, opts))
    tlayer = f"{root}/layer"
    for d in ("lower", "upper", "work", "merged"):
        os.makedirs(f"{tlayer}/{d}")
    opts = f"lowerdir={tlayer}/lower,upperdir={tlayer}/upper,workdir={tlayer}/work,userxattr"
    row("overlay, upper on a tmpfs", mount("overlay", f"{tlayer}/merged", "overlay", 0, opts))
    os.makedirs(f"{root}/proc")
    row("fresh /proc", mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV))
    os._exit(0)


main()
