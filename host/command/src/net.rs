//! A command's network when it may reach only GOAT's egress proxy
//! ([`Network::Proxied`], ADR-0082): what the kernel lets its sockets do,
//! where the proxy listens for it, and the variables that point its tools
//! there. The proxy itself (what it allows, the decisions) is the host's,
//! behind [`ProxyLink`]; this crate only makes one TCP port reachable.
//!
//! - **In a view** the command has a network namespace of its own with
//!   nothing in it but a loopback interface. The view's first child, still
//!   holding the capabilities of its new user namespace, brings `lo` up,
//!   makes a listening socket on `127.0.0.1:`[`VIEW_PROXY_PORT`] *in that
//!   namespace*, and hands it to GOAT over a Unix socket pair
//!   (`SCM_RIGHTS`) before anything of the command runs. A socket keeps
//!   the namespace it was made in, so GOAT's proxy accepts, on the host,
//!   connections made inside the view: there is no relay process, no
//!   socket file bound into the view, and no route out of it at all.
//! - **With Landlock only** the proxy listens on the host's loopback, on
//!   a port the kernel picks, and Landlock allows a TCP connect to that
//!   one port. Landlock's network rules name ports, not addresses, so the
//!   port is open on every address: see docs/security.md.
//!
//! In both, seccomp keeps sockets to Unix and plain TCP (no UDP, raw,
//! MPTCP or SCTP, which Landlock's TCP rules do not cover) and refuses
//! `MSG_FASTOPEN`, whose implicit connect no LSM hook sees.
//!
//! [`Network::Proxied`]: crate::Network::Proxied

use std::ffi::OsString;
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

/// The host's side of a proxied network: GOAT's egress proxy, serving one
/// command.
pub trait ProxyLink: Sync + std::fmt::Debug {
    /// Serves connections made to `listener` (listening already, on the
    /// host's loopback or in the command's own network namespace) for as
    /// long as the caller's call lasts; the caller stops it.
    fn serve(&self, listener: TcpListener) -> io::Result<()>;
}

/// Where the proxy listens inside a view's own network namespace. Any
/// port would do (nothing else listens there, and the command may not
/// bind); this is the one proxies conventionally use.
pub const VIEW_PROXY_PORT: u16 = 3128;

/// How many connections wait to be accepted in the view's listener: a
/// build opening dozens at once waits for none.
const BACKLOG: i32 = 128;

/// What the kernel lets a command's sockets do, for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NetRules {
    /// Unix sockets only; no TCP bind or connect.
    Closed,
    /// As any process.
    Open,
    /// Unix sockets, and plain TCP connecting to this port only.
    ConnectPort(u16),
}

/// The variables that send a command's HTTP clients to the proxy: curl
/// (and so cargo and git) read `http_proxy` in lower case only and
/// `HTTPS_PROXY` in either, Python's `urllib` and most others read
/// either; both spellings are set. `NO_PROXY` is never set: nothing
/// reaches anything without the proxy.
pub(crate) fn proxy_env(port: u16) -> Vec<(OsString, OsString)> {
    let url = format!("http://127.0.0.1:{port}");
    PROXY_VARIABLES
        .iter()
        .map(|name| (OsString::from(name), OsString::from(&url)))
        .collect()
}

/// The proxy variables GOAT sets.
const PROXY_VARIABLES: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// Whether a variable is one GOAT sets for the proxy, or one that would
/// send a client around it: never passed through from `commands.env`.
pub(crate) fn is_proxy_variable(name: &str) -> bool {
    PROXY_VARIABLES.contains(&name) || name.eq_ignore_ascii_case("no_proxy")
}

/// A loopback listener on the host for a Landlock-only command: the kernel
/// picks the port.
pub(crate) fn host_listener() -> io::Result<TcpListener> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
}

/// The pair GOAT receives the view's listener over: (GOAT's end, the
/// child's end), both close-on-exec.
pub(crate) fn channel() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// In the view's first child, after its namespaces and id maps: `lo` up,
/// a listener on `127.0.0.1:port` in the new network namespace, sent to
/// GOAT over `channel`, then closed here. System calls only, on the
/// stack.
pub(crate) fn listen_in_view(port: u16, channel: RawFd) -> io::Result<()> {
    loopback_up()?;
    let listener = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::bind(&listener, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))?;
    rustix::net::listen(&listener, BACKLOG)?;
    #[expect(unsafe_code, reason = "a descriptor number kept open by the parent")]
    // SAFETY: `channel` is the child's end of the pair GOAT made and keeps
    // open until the spawn has returned.
    let channel = unsafe { BorrowedFd::borrow_raw(channel) };
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [listener.as_fd()];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::from(io::ErrorKind::OutOfMemory));
    }
    rustix::net::sendmsg(
        channel,
        &[IoSlice::new(b"L")],
        &mut control,
        SendFlags::empty(),
    )?;
    drop(listener);
    Ok(())
}

/// `ip link set lo up` in the current network namespace (the view's
/// first child holds `CAP_NET_ADMIN` there).
fn loopback_up() -> io::Result<()> {
    let sock = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    let mut req = libc::ifreq {
        ifr_name: [0; libc::IFNAMSIZ],
        ifr_ifru: libc::__c_anonymous_ifr_ifru { ifru_flags: 0 },
    };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo") {
        *dst = *src as libc::c_char;
    }
    use std::os::fd::AsRawFd;
    #[expect(unsafe_code, reason = "SIOCGIFFLAGS and SIOCSIFFLAGS on a stack ifreq")]
    // SAFETY: `req` is a valid, initialised `ifreq` naming `lo`, alive for
    // both calls; the ioctls read and write only that structure.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &raw mut req) < 0 {
            return Err(io::Error::last_os_error());
        }
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &raw const req) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// In GOAT, once the spawn has returned (the view's first child sent its
/// listener before the command could start): the listener.
pub(crate) fn receive_listener(ours: &OwnedFd) -> io::Result<TcpListener> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    rustix::net::recvmsg(
        ours,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
    )?;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(mut fds) = message
            && let Some(fd) = fds.next()
        {
            return Ok(TcpListener::from(fd));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "the view sent no listener for the proxy",
    ))
}
