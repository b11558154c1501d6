//! The command's system-call filter (seccomp-bpf), compiled in GOAT before
//! the fork and installed in the child after Landlock.
//!
//! It refuses, with `EPERM`, only what Landlock cannot express:
//!
//! - `setsid` and `setpgid`: the command stays in the process group GOAT
//!   kills when it ends or times out, so nothing it starts can detach;
//! - `io_uring_setup`, `io_uring_enter`, `io_uring_register`: io_uring runs
//!   socket and file operations outside the system calls filtered here;
//! - `keyctl`, `add_key` and `request_key`: the kernel keyrings of the
//!   session GOAT was started in hold secrets no build needs;
//! - with the network closed, `socket` for any family but `AF_UNIX` (UDP,
//!   raw and netlink sockets are beyond Landlock's TCP rules);
//! - with the network proxied ([`crate::net`]), `socket` for anything but
//!   `AF_UNIX` and plain TCP over IPv4 or IPv6 (`SOCK_STREAM`, protocol 0
//!   or `IPPROTO_TCP`: MPTCP and SCTP streams are outside Landlock's TCP
//!   rules), and `sendto`, `sendmsg`, `sendmmsg` with `MSG_FASTOPEN`,
//!   which connects without the `connect` Landlock checks.
//!
//! - with the network proxied and no namespace of its own (Landlock only,
//!   [`Inbound::HostNetwork`]), `listen`: a TCP socket that listens without
//!   a `bind` is given a port on every address of the host by the kernel,
//!   and Landlock's bind rule is not asked (the hostile review of
//!   ADR-0082). Unix sockets cannot listen then either.
//!
//! Everything else is allowed: the filter is a fence for a few doors, not
//! an allowlist of a build's system calls.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::net::NetRules;

/// The `errno` a refused call returns: "operation not permitted", which
/// programs report sensibly.
const REFUSED: u32 = rustix::io::Errno::PERM.raw_os_error() as u32;

/// Where a listening socket of the command would listen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inbound {
    /// In a network namespace of its own: nothing outside can reach it.
    OwnNamespace,
    /// On the host's network (Landlock only).
    HostNetwork,
}

/// The filter for a command, as a program ready to install.
pub(crate) fn program(network: NetRules, inbound: Inbound) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [
        libc_nr::SETSID,
        libc_nr::SETPGID,
        libc_nr::IO_URING_SETUP,
        libc_nr::IO_URING_ENTER,
        libc_nr::IO_URING_REGISTER,
        libc_nr::ADD_KEY,
        libc_nr::REQUEST_KEY,
        libc_nr::KEYCTL,
    ] {
        // An empty rule list matches the call whatever its arguments.
        rules.insert(call, Vec::new());
    }
    match network {
        NetRules::Open => {}
        NetRules::Closed => {
            let not_unix = cond(0, SeccompCmpOp::Ne, AF_UNIX)?;
            rules.insert(libc_nr::SOCKET, vec![rule(vec![not_unix])?]);
        }
        NetRules::ConnectPort(_) => {
            rules.insert(libc_nr::SOCKET, tcp_only()?);
            let fast_open = |arg| cond(arg, SeccompCmpOp::MaskedEq(MSG_FASTOPEN), MSG_FASTOPEN);
            rules.insert(libc_nr::SENDTO, vec![rule(vec![fast_open(3)?])?]);
            rules.insert(libc_nr::SENDMSG, vec![rule(vec![fast_open(2)?])?]);
            rules.insert(libc_nr::SENDMMSG, vec![rule(vec![fast_open(3)?])?]);
            if inbound == Inbound::HostNetwork {
                rules.insert(libc_nr::LISTEN, Vec::new());
            }
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(REFUSED),
        arch,
    )
    .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// One comparison of a 32-bit argument.
fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
}

/// A rule that matches when every condition does.
fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

/// The `socket` calls refused with the network proxied: any family but
/// Unix, IPv4 and IPv6; for IPv4 and IPv6, any type but a stream (the
/// type's low four bits; the high ones are `SOCK_NONBLOCK` and
/// `SOCK_CLOEXEC`), and any protocol but 0 and TCP. A rule matches when
/// all its conditions do, and the call is refused when any rule matches.
fn tcp_only() -> Result<Vec<SeccompRule>, String> {
    let mut refused = vec![rule(vec![
        cond(0, SeccompCmpOp::Ne, AF_UNIX)?,
        cond(0, SeccompCmpOp::Ne, AF_INET)?,
        cond(0, SeccompCmpOp::Ne, AF_INET6)?,
    ])?];
    for family in [AF_INET, AF_INET6] {
        for kind in (0..16).filter(|k| *k != SOCK_STREAM) {
            refused.push(rule(vec![
                cond(0, SeccompCmpOp::Eq, family)?,
                cond(1, SeccompCmpOp::MaskedEq(0xf), kind)?,
            ])?);
        }
        refused.push(rule(vec![
            cond(0, SeccompCmpOp::Eq, family)?,
            cond(2, SeccompCmpOp::Ne, 0)?,
            cond(2, SeccompCmpOp::Ne, IPPROTO_TCP)?,
        ])?);
    }
    Ok(refused)
}

/// `AF_UNIX`, `AF_INET`, `AF_INET6`.
const AF_UNIX: u64 = 1;
const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;

/// `SOCK_STREAM`.
const SOCK_STREAM: u64 = 1;

/// `IPPROTO_TCP`.
const IPPROTO_TCP: u64 = 6;

/// `MSG_FASTOPEN`: send data with the SYN, connecting implicitly.
const MSG_FASTOPEN: u64 = 0x2000_0000;

/// System call numbers for this architecture.
mod libc_nr {
    #[cfg(target_arch = "x86_64")]
    mod arch {
        pub const SETSID: i64 = 112;
        pub const SETPGID: i64 = 109;
        pub const SOCKET: i64 = 41;
        pub const LISTEN: i64 = 50;
        pub const SENDTO: i64 = 44;
        pub const SENDMSG: i64 = 46;
        pub const SENDMMSG: i64 = 307;
        pub const ADD_KEY: i64 = 248;
        pub const REQUEST_KEY: i64 = 249;
        pub const KEYCTL: i64 = 250;
    }
    #[cfg(any(target_arch = "aarch64", target_arch = "riscv64"))]
    mod arch {
        pub const SETSID: i64 = 157;
        pub const SETPGID: i64 = 154;
        pub const SOCKET: i64 = 198;
        pub const LISTEN: i64 = 201;
        pub const SENDTO: i64 = 206;
        pub const SENDMSG: i64 = 211;
        pub const SENDMMSG: i64 = 269;
        pub const ADD_KEY: i64 = 217;
        pub const REQUEST_KEY: i64 = 218;
        pub const KEYCTL: i64 = 219;
    }
    pub use arch::*;
    // The same on every architecture (added after the tables were unified).
    pub const IO_URING_SETUP: i64 = 425;
    pub const IO_URING_ENTER: i64 = 426;
    pub const IO_URING_REGISTER: i64 = 427;
}

/// Installs `program` on the calling thread. Called in the child after
/// `no_new_privs` is set (Landlock's `restrict_self` sets it).
pub(crate) fn install(program: &BpfProgram) -> std::io::Result<()> {
    seccompiler::apply_filter(program).map_err(|e| match e {
        seccompiler::Error::Seccomp(errno) | seccompiler::Error::Prctl(errno) => errno,
        _ => std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    })
}
