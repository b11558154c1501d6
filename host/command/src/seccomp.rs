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
//!   raw and netlink sockets are beyond Landlock's TCP rules).
//!
//! Everything else is allowed: the filter is a fence for a few doors, not
//! an allowlist of a build's system calls.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::run::Network;

/// The `errno` a refused call returns: "operation not permitted", which
/// programs report sensibly.
const REFUSED: u32 = rustix::io::Errno::PERM.raw_os_error() as u32;

/// The filter for a command, as a program ready to install.
pub fn program(network: Network) -> Result<BpfProgram, String> {
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
    if network == Network::Closed {
        let not_unix =
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, AF_UNIX as u64)
                .map_err(|e| e.to_string())?;
        rules.insert(
            libc_nr::SOCKET,
            vec![SeccompRule::new(vec![not_unix]).map_err(|e| e.to_string())?],
        );
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

/// `AF_UNIX`.
const AF_UNIX: u32 = 1;

/// System call numbers for this architecture.
mod libc_nr {
    #[cfg(target_arch = "x86_64")]
    mod arch {
        pub const SETSID: i64 = 112;
        pub const SETPGID: i64 = 109;
        pub const SOCKET: i64 = 41;
        pub const ADD_KEY: i64 = 248;
        pub const REQUEST_KEY: i64 = 249;
        pub const KEYCTL: i64 = 250;
    }
    #[cfg(any(target_arch = "aarch64", target_arch = "riscv64"))]
    mod arch {
        pub const SETSID: i64 = 157;
        pub const SETPGID: i64 = 154;
        pub const SOCKET: i64 = 198;
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
