//! IP addresses and CIDR blocks as Go's `net.ParseIP`, `net.ParseCIDR` and
//! `IPNet.Contains` treat them (MinIO's `IpAddress` condition uses them).
//!
//! Go's rules kept here: IPv4 octets without leading zeros; IPv6 with one
//! `::` at most and an IPv4 tail; no zones; the prefix length in decimal
//! (leading zeros allowed). An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
//! is the IPv4 address, and a block whose network is IPv4-mapped with a
//! prefix of 96 or more is the IPv4 block of the remaining bits. An IPv4
//! address is never inside an IPv6 block otherwise (not even `::/0`).

/// An address: IPv4 in 4 bytes, IPv6 in 16 (IPv4-mapped ones are IPv4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Ip {
    V4([u8; 4]),
    V6([u8; 16]),
}

/// A block: the network number, already masked, and the prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Cidr {
    net: Ip,
    prefix: u8,
}

/// Reads an address as `net.ParseIP` does; `None` if Go refuses it.
pub(crate) fn parse_ip(s: &str) -> Option<Ip> {
    Some(normalize(parse_addr(s)?))
}

/// Reads a block as `net.ParseCIDR` does.
pub(crate) fn parse_cidr(s: &str) -> Option<Cidr> {
    let (addr, len) = s.split_once('/')?;
    let ip = parse_addr(addr)?;
    let bits: u32 = match ip {
        Ip::V4(_) => 32,
        Ip::V6(_) => 128,
    };
    if len.is_empty() || !len.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // Go stops at 2^24; any such prefix is out of range anyway.
    let prefix: u32 = if len.len() > 8 {
        u32::MAX
    } else {
        len.parse().ok()?
    };
    if prefix > bits {
        return None;
    }
    Some(Cidr::new(ip, prefix as u8))
}

impl Cidr {
    fn new(ip: Ip, prefix: u8) -> Cidr {
        match ip {
            Ip::V4(a) => Cidr {
                net: Ip::V4(mask(a, prefix)),
                prefix,
            },
            Ip::V6(a) => {
                let net = mask(a, prefix);
                match v4_in_v6(&net) {
                    // Go's networkNumberAndMask keeps the last 4 bytes of
                    // the mask; the mapped prefix covers the first 96 bits.
                    Some(v4) => Cidr {
                        net: Ip::V4(v4),
                        prefix: prefix - 96,
                    },
                    None => Cidr {
                        net: Ip::V6(net),
                        prefix,
                    },
                }
            }
        }
    }

    /// Whether `ip` is inside this block.
    pub(crate) fn contains(&self, ip: Ip) -> bool {
        match (self.net, ip) {
            (Ip::V4(n), Ip::V4(a)) => mask(a, self.prefix) == n,
            (Ip::V6(n), Ip::V6(a)) => mask(a, self.prefix) == n,
            _ => false,
        }
    }

    /// A single address as a block of its own (`/32` or `/128`).
    pub(crate) fn host(ip: Ip) -> Cidr {
        match ip {
            Ip::V4(_) => Cidr::new(ip, 32),
            Ip::V6(_) => Cidr::new(ip, 128),
        }
    }
}

fn mask<const N: usize>(mut a: [u8; N], prefix: u8) -> [u8; N] {
    let prefix = usize::from(prefix);
    for (i, byte) in a.iter_mut().enumerate() {
        let keep = prefix.saturating_sub(i * 8).min(8);
        *byte &= if keep == 0 { 0 } else { 0xffu8 << (8 - keep) };
    }
    a
}

fn v4_in_v6(a: &[u8; 16]) -> Option<[u8; 4]> {
    (a[..10].iter().all(|&b| b == 0) && a[10] == 0xff && a[11] == 0xff)
        .then(|| [a[12], a[13], a[14], a[15]])
}

fn normalize(ip: Ip) -> Ip {
    match ip {
        Ip::V6(a) => v4_in_v6(&a).map_or(ip, Ip::V4),
        v4 => v4,
    }
}

/// `netip.ParseAddr` without zones: the family is chosen by whichever of
/// `.` and `:` comes first.
fn parse_addr(s: &str) -> Option<Ip> {
    match s.bytes().find(|c| matches!(c, b'.' | b':' | b'%'))? {
        b'.' => parse_v4(s.as_bytes()).map(Ip::V4),
        b':' => parse_v6(s.as_bytes()).map(Ip::V6),
        _ => None,
    }
}

fn parse_v4(s: &[u8]) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut n = 0;
    for field in s.split(|&c| c == b'.') {
        if n == 4
            || field.is_empty()
            || field.len() > 3
            || (field.len() > 1 && field[0] == b'0')
            || !field.iter().all(u8::is_ascii_digit)
        {
            return None;
        }
        let v = field.iter().fold(0u32, |v, c| v * 10 + u32::from(c - b'0'));
        out[n] = u8::try_from(v).ok()?;
        n += 1;
    }
    (n == 4).then_some(out)
}

fn parse_v6(mut s: &[u8]) -> Option<[u8; 16]> {
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.starts_with(b"::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Some(ip);
        }
    }
    let mut i = 0;
    while i < 16 {
        let digits = s.iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if digits == 0 || digits > 4 {
            return None;
        }
        if s.get(digits) == Some(&b'.') {
            // An IPv4 tail: only as the last 32 bits.
            if (ellipsis.is_none() && i != 12) || i + 4 > 16 {
                return None;
            }
            let v4 = parse_v4(s)?;
            ip[i..i + 4].copy_from_slice(&v4);
            s = &[];
            i += 4;
            break;
        }
        let group = s[..digits]
            .iter()
            .fold(0u16, |v, &c| (v << 4) | u16::from(hex_value(c)));
        ip[i..i + 2].copy_from_slice(&group.to_be_bytes());
        i += 2;
        s = &s[digits..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' || s.len() == 1 {
            return None;
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return None;
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return None;
    }
    match (i < 16, ellipsis) {
        (true, None) => None,
        (true, Some(e)) => {
            let n = 16 - i;
            ip.copy_within(e..i, e + n);
            ip[e..e + n].fill(0);
            Some(ip)
        }
        // `::` must stand for at least one group of zeros.
        (false, Some(_)) => None,
        (false, None) => Some(ip),
    }
}

fn hex_value(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inside(cidr: &str, ip: &str) -> bool {
        parse_cidr(cidr).unwrap().contains(parse_ip(ip).unwrap())
    }

    #[test]
    fn addresses() {
        assert_eq!(parse_ip("1.2.3.4"), Some(Ip::V4([1, 2, 3, 4])));
        assert_eq!(parse_ip("::ffff:1.2.3.4"), Some(Ip::V4([1, 2, 3, 4])));
        assert_eq!(parse_ip("::ffff:102:304"), Some(Ip::V4([1, 2, 3, 4])));
        let mut loopback = [0u8; 16];
        loopback[15] = 1;
        assert_eq!(parse_ip("::1"), Some(Ip::V6(loopback)));
        assert_eq!(parse_ip("0:0:0:0:0:0:0:1"), Some(Ip::V6(loopback)));
        assert_eq!(parse_ip("::"), Some(Ip::V6([0; 16])));
        assert!(parse_ip("1:2:3:4:5:6:7::").is_some());
        assert!(parse_ip("::2:3:4:5:6:7:8").is_some());
        assert!(parse_ip("1:2:3:4:5:6:1.2.3.4").is_some());
        for bad in [
            "",
            "1.2.3",
            "1.2.3.4.5",
            "01.2.3.4",
            "256.1.1.1",
            "1..2.3",
            "1.2.3.4 ",
            "fe80::1%eth0",
            ":::",
            "1:2:3:4:5:6:7:8::",
            "1::2::3",
            "12345::",
            "1:2:3:4:5:6:7",
            "1:2:3:4:5:1.2.3.4",
            "::1.2.3",
            "1:",
            ":1",
            "g::",
            "1.2.3.4:80",
        ] {
            assert_eq!(parse_ip(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn blocks() {
        assert!(inside("10.0.0.0/8", "10.255.1.2"));
        assert!(!inside("10.0.0.0/8", "11.0.0.1"));
        assert!(inside("10.1.2.3/8", "10.9.9.9"));
        assert!(inside("0.0.0.0/0", "8.8.8.8"));
        assert!(inside("10.0.0.0/008", "10.9.9.9"));
        assert!(inside("2001:db8::/32", "2001:db8:1::5"));
        assert!(!inside("2001:db8::/32", "2001:db9::5"));
        assert!(!inside("::/0", "1.2.3.4"));
        assert!(inside("::/0", "::1"));
        assert!(inside("::ffff:10.0.0.0/104", "10.1.2.3"));
        assert!(inside("10.0.0.0/8", "::ffff:10.1.2.3"));
        assert!(inside("::ffff:0.0.0.0/96", "192.168.0.1"));
        assert!(inside("1.2.3.4/32", "1.2.3.4"));
        assert!(!inside("1.2.3.4/32", "1.2.3.5"));
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0.0/",
            "10.0.0.0/-1",
            "::/129",
            "a/8",
            "10.0.0.0/8/8",
        ] {
            assert!(parse_cidr(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn hosts() {
        let h = Cidr::host(parse_ip("1.2.3.4").unwrap());
        assert!(h.contains(parse_ip("1.2.3.4").unwrap()));
        assert!(!h.contains(parse_ip("1.2.3.5").unwrap()));
        let h6 = Cidr::host(parse_ip("2001:db8::1").unwrap());
        assert!(h6.contains(parse_ip("2001:db8::1").unwrap()));
        assert!(!h6.contains(parse_ip("2001:db8::2").unwrap()));
    }
}
