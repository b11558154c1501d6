//! A TLS ClientHello built by hand, for tests of what reads one (the
//! egress proxy checks the name a tunnel's handshake asks for).

/// A minimal TLS 1.2-framed ClientHello record naming `name` in its
/// server_name extension (or with no server_name when `None`), followed by
/// the raw extensions `more`. One record, one handshake message, one cipher
/// suite (TLS_AES_128_GCM_SHA256), no compression; lengths are not checked,
/// so a test can build a hello that claims too much.
pub fn tls_client_hello(name: Option<&str>, more: &[u8]) -> Vec<u8> {
    let mut ext = Vec::new();
    if let Some(name) = name {
        let mut list = vec![0u8];
        list.extend((name.len() as u16).to_be_bytes());
        list.extend(name.as_bytes());
        let mut data = (list.len() as u16).to_be_bytes().to_vec();
        data.extend(list);
        ext.extend(0u16.to_be_bytes());
        ext.extend((data.len() as u16).to_be_bytes());
        ext.extend(data);
    }
    ext.extend(more);
    // Version, random, an empty session id, one cipher suite, the null
    // compression method.
    let mut body = vec![3, 3];
    body.extend([7u8; 32]);
    body.push(0);
    body.extend([0, 2, 0x13, 0x01]);
    body.extend([1, 0]);
    body.extend((ext.len() as u16).to_be_bytes());
    body.extend(ext);
    let mut hs = vec![1u8];
    hs.extend(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend(body);
    let mut record = vec![0x16, 3, 1];
    record.extend((hs.len() as u16).to_be_bytes());
    record.extend(hs);
    record
}
