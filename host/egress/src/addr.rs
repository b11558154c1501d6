//! Which addresses are the public internet and which are not.
//!
//! A name on the list is expected to lead to a public address. One that
//! resolves to this machine, the local network or a reserved range (a DNS
//! answer an attacker controls, rebinding a listed name to `127.0.0.1` or
//! a cloud's metadata service at `169.254.169.254`) is refused unless that
//! address is listed itself. `std`'s `is_global` is unstable, so the ranges
//! are written out here, from the IANA special-purpose registries.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of address a destination is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressClass {
    /// Routable on the internet.
    Public,
    /// This machine (`127.0.0.0/8`, `::1`).
    Loopback,
    /// A private network (`10/8`, `172.16/12`, `192.168/16`, shared
    /// `100.64/10`, unique-local `fc00::/7`, site-local `fec0::/10`).
    Private,
    /// Link-local (`169.254/16`, where cloud metadata services live;
    /// `fe80::/10`).
    LinkLocal,
    /// Unspecified, broadcast, multicast, documentation, benchmarking or
    /// otherwise reserved: nothing a registry is at.
    Reserved,
}

impl AddressClass {
    /// In words, for a refusal.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Public => "a public address",
            Self::Loopback => "a loopback address (this machine)",
            Self::Private => "a private network address",
            Self::LinkLocal => "a link-local address",
            Self::Reserved => "a reserved address",
        }
    }
}

/// The class of `ip`. An IPv6 address that carries an IPv4 address
/// (IPv4-mapped, IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`)
/// is classed by the IPv4 address, since that is where it leads.
pub fn class(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => class_v4(v4),
        IpAddr::V6(v6) => class_v6(v6),
    }
}

fn class_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        (127, _, _) => AddressClass::Loopback,
        (10, _, _) | (192, 168, _) => AddressClass::Private,
        (172, 16..=31, _) | (100, 64..=127, _) => AddressClass::Private,
        (169, 254, _) => AddressClass::LinkLocal,
        // This network, IETF protocol assignments, documentation,
        // benchmarking, 6to4 relay, multicast and reserved (with the
        // broadcast address).
        (0, _, _)
        | (192, 0, 0)
        | (192, 0, 2)
        | (198, 51, 100)
        | (203, 0, 113)
        | (198, 18..=19, _)
        | (192, 88, 99)
        | (224..=255, _, _) => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

fn class_v6(ip: Ipv6Addr) -> AddressClass {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return class_v4(v4);
    }
    let s = ip.segments();
    if ip.is_loopback() {
        return AddressClass::Loopback;
    }
    if ip.is_unspecified() {
        return AddressClass::Reserved;
    }
    // IPv4-compatible (deprecated, ::a.b.c.d) and NAT64 (64:ff9b::/96):
    // the last 32 bits are where it goes.
    let embedded = Ipv4Addr::new(
        (s[6] >> 8) as u8,
        (s[6] & 0xff) as u8,
        (s[7] >> 8) as u8,
        (s[7] & 0xff) as u8,
    );
    if s[..6] == [0; 6] || (s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4]) {
        return class_v4(embedded);
    }
    // 6to4: 2002:AABB:CCDD::/48 leads to AA.BB.CC.DD.
    if s[0] == 0x2002 {
        return class_v4(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            (s[1] & 0xff) as u8,
            (s[2] >> 8) as u8,
            (s[2] & 0xff) as u8,
        ));
    }
    match s[0] {
        0xfc00..=0xfdff | 0xfec0..=0xfeff => AddressClass::Private,
        0xfe80..=0xfebf => AddressClass::LinkLocal,
        0xff00..=0xffff => AddressClass::Reserved,
        // Documentation (2001:db8::/32, 3fff::/20), discard (100::/64),
        // Teredo (2001::/32, which tunnels to an address GOAT cannot see),
        // ORCHID and benchmarking (2001:2::/48, 2001:10::/28,
        // 2001:20::/28).
        0x3fff if s[1] < 0x1000 => AddressClass::Reserved,
        0x2001 if s[1] == 0x0db8 || s[1] == 0 || s[1] == 2 || (0x10..=0x2f).contains(&s[1]) => {
            AddressClass::Reserved
        }
        0x0100 if s[1..4] == [0; 3] => AddressClass::Reserved,
        // Everything outside 2000::/3 is unassigned.
        0x2000..=0x3fff => AddressClass::Public,
        _ => AddressClass::Reserved,
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_classed_by_where_they_lead() {
        let table: &[(&str, AddressClass)] = &[
            ("8.8.8.8", AddressClass::Public),
            ("151.101.1.137", AddressClass::Public),
            ("127.0.0.1", AddressClass::Loopback),
            ("127.255.0.9", AddressClass::Loopback),
            ("10.1.2.3", AddressClass::Private),
            ("172.16.0.1", AddressClass::Private),
            ("172.31.255.255", AddressClass::Private),
            ("172.32.0.1", AddressClass::Public),
            ("192.168.1.1", AddressClass::Private),
            ("100.64.0.1", AddressClass::Private),
            ("100.128.0.1", AddressClass::Public),
            ("169.254.169.254", AddressClass::LinkLocal),
            ("0.0.0.0", AddressClass::Reserved),
            ("255.255.255.255", AddressClass::Reserved),
            ("224.0.0.1", AddressClass::Reserved),
            ("192.0.2.1", AddressClass::Reserved),
            ("198.18.0.1", AddressClass::Reserved),
            ("::1", AddressClass::Loopback),
            ("::", AddressClass::Reserved),
            ("::ffff:127.0.0.1", AddressClass::Loopback),
            ("::ffff:8.8.8.8", AddressClass::Public),
            ("::127.0.0.1", AddressClass::Loopback),
            ("64:ff9b::a9fe:a9fe", AddressClass::LinkLocal),
            ("64:ff9b::808:808", AddressClass::Public),
            ("2002:7f00:1::", AddressClass::Loopback),
            ("2002:808:808::", AddressClass::Public),
            ("fd00::1", AddressClass::Private),
            ("fc00::1", AddressClass::Private),
            ("fec0::1", AddressClass::Private),
            ("fe80::1", AddressClass::LinkLocal),
            ("ff02::1", AddressClass::Reserved),
            ("2001:db8::1", AddressClass::Reserved),
            ("2001::1", AddressClass::Reserved),
            ("100::1", AddressClass::Reserved),
            ("2a04:4e42::223", AddressClass::Public),
            ("2606:4700::6810:1", AddressClass::Public),
            ("4000::1", AddressClass::Reserved),
        ];
        for (raw, want) in table {
            let ip: IpAddr = raw.parse().unwrap();
            assert_eq!(class(ip), *want, "{raw}");
        }
    }
}
