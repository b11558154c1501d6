//! Random names and secrets: bytes from the kernel's `getrandom`, as hex.

/// `bytes` random bytes as lowercase hex (twice as many characters).
pub(crate) fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    rustix::rand::getrandom(&mut buf, rustix::rand::GetRandomFlags::empty())?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}
