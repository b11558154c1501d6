//! Every capability dropped before a command's `exec`, in a view and
//! with Landlock only alike. System calls only: it runs in the forked child.

use std::io;

/// Every capability gone, in every set, and root given none back at
/// `exec` (the bounding set is empty and the secure bits are locked).
///
/// A process without `CAP_SETPCAP` (a user that is not root, or root in a
/// container that dropped it) may neither empty the bounding set nor lock
/// the secure bits; it has no capabilities to lose, and with
/// `no_new_privs`, which Landlock and seccomp set before `exec`, `exec`
/// gives it none (set-user-ID bits and file capabilities are ignored, and
/// root's at `exec` is cut to what it had). So for it the sets are only
/// emptied.
pub(crate) fn drop_capabilities() -> io::Result<()> {
    use rustix::thread::{CapabilitiesSecureBits, CapabilitySet, CapabilitySets};
    let held = rustix::thread::capabilities(None)?;
    if !held.effective.contains(CapabilitySet::SETPCAP) {
        rustix::thread::clear_ambient_capability_set()?;
        return Ok(rustix::thread::set_capabilities(
            None,
            CapabilitySets {
                effective: CapabilitySet::empty(),
                permitted: CapabilitySet::empty(),
                inheritable: CapabilitySet::empty(),
            },
        )?);
    }
    // Capability numbers up to the highest any kernel knows; one the
    // running kernel does not know answers EINVAL and is not there.
    for cap in 0..=63u32 {
        let one = CapabilitySet::from_bits_retain(1u64 << cap);
        match rustix::thread::remove_capability_from_bounding_set(one) {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(e.into()),
        }
    }
    rustix::thread::clear_ambient_capability_set()?;
    rustix::thread::set_capabilities_secure_bits(
        CapabilitiesSecureBits::NO_ROOT
            | CapabilitiesSecureBits::NO_ROOT_LOCKED
            | CapabilitiesSecureBits::NO_SETUID_FIXUP
            | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
            | CapabilitiesSecureBits::KEEP_CAPS_LOCKED,
    )?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )?;
    Ok(())
}
