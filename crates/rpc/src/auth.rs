//! Node authentication. Every node derives the same cluster key from the
//! root credentials; a connection between two nodes opens with a hello that
//! proves the caller holds the key, names the node it is meant for, carries
//! the caller's clock and a fresh nonce; the answer (a welcome) proves the
//! same of the callee. Calls on an admitted connection need no token of
//! their own: authentication costs one MAC per connection, not per call.
//!
//! A hello is refused when its MAC is wrong, when it names another node,
//! when the clocks differ by more than the bound (reported with the peer's
//! name and the difference), or when its nonce was seen within the bound
//! (a replay). The default credentials (`minioadmin`) and short secrets
//! derive no key: a cluster with them would be open to anyone.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = hmac::Hmac<Sha256>;

/// The header a hello and a welcome travel in.
pub const AUTH_HEADER: &str = "x-tessera-node-auth";

/// Hellos remembered for replay detection at most; beyond this, hellos are
/// refused until old ones expire (only holders of the key can fill it).
const MAX_REMEMBERED: usize = 65_536;

/// Why a key cannot be derived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// MinIO's and Tessera's default credentials.
    #[error(
        "the root credentials are the defaults (minioadmin): set TESSERA_ROOT_USER and \
         TESSERA_ROOT_PASSWORD on every node before starting a cluster"
    )]
    Default,
    /// An empty access key or a secret shorter than 8 characters.
    #[error("the root secret is shorter than 8 characters or the access key is empty")]
    Weak,
}

/// Why a hello or a welcome is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Not a hello or a welcome.
    #[error("malformed node authentication: {0}")]
    Malformed(&'static str),
    /// The MAC does not verify: another key (other root credentials).
    #[error("node authentication failed: the peer holds other root credentials")]
    BadMac,
    /// The hello names another node.
    #[error("the hello is for node {got}, this is {expected}")]
    WrongNode {
        /// This node.
        expected: String,
        /// The node the hello names.
        got: String,
    },
    /// The clocks are too far apart.
    #[error(
        "clock skew: node {peer} is {} ms {} this node (at most {max_ms} ms allowed); \
         synchronise the clocks (NTP)",
        by_ms.unsigned_abs(),
        if *by_ms < 0 { "behind" } else { "ahead of" }
    )]
    Skew {
        /// The peer's name.
        peer: String,
        /// The peer's clock minus this node's, in milliseconds.
        by_ms: i64,
        /// The bound.
        max_ms: u64,
    },
    /// The hello was seen before.
    #[error("replayed node hello")]
    Replayed,
    /// Too many hellos remembered.
    #[error("too many node hellos within the skew bound")]
    Busy,
}

/// The key every node of a cluster derives from the root credentials.
/// Wiped when dropped, never printed.
pub struct ClusterKey([u8; 32]);

impl ClusterKey {
    /// The key of the cluster whose root credentials these are.
    pub fn derive(access_key: &str, secret_key: &str) -> Result<ClusterKey, KeyError> {
        if access_key == "minioadmin" && secret_key == "minioadmin" {
            return Err(KeyError::Default);
        }
        if access_key.is_empty() || secret_key.chars().count() < 8 {
            return Err(KeyError::Weak);
        }
        let mut mac = HmacSha256::new_from_slice(secret_key.as_bytes())
            .expect("HMAC takes keys of any length");
        mac.update(b"tessera node rpc v1\n");
        mac.update(access_key.as_bytes());
        Ok(ClusterKey(mac.finalize().into_bytes().into()))
    }

    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        for p in parts {
            // Length-prefixed: no two part lists MAC the same bytes.
            mac.update(&(p.len() as u64).to_be_bytes());
            mac.update(p);
        }
        mac.finalize().into_bytes().into()
    }
}

impl Drop for ClusterKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A node name as hellos carry it: `host:port` or similar, no separators.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b',' && b != b'=')
}

/// A hello the caller sends: the header value and its nonce (to check the
/// welcome with).
pub fn hello(key: &ClusterKey, from: &str, to: &str, now: SystemTime) -> (String, [u8; 16]) {
    let mut nonce = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut nonce)
        .expect("the system's random source");
    let t = millis(now).to_string();
    let mac = key.mac(&[
        b"hello",
        from.as_bytes(),
        to.as_bytes(),
        t.as_bytes(),
        &nonce,
    ]);
    (
        format!(
            "v1 from={from},to={to},t={t},n={},mac={}",
            hex::encode(nonce),
            hex::encode(mac)
        ),
        nonce,
    )
}

/// The fields of a `v1 k=v,k=v` header.
fn fields(header: &str) -> Result<HashMap<&str, &str>, AuthError> {
    let rest = header
        .strip_prefix("v1 ")
        .ok_or(AuthError::Malformed("not a v1 header"))?;
    let mut out = HashMap::new();
    for kv in rest.split(',') {
        let (k, v) = kv
            .split_once('=')
            .ok_or(AuthError::Malformed("a field without a value"))?;
        if out.insert(k, v).is_some() {
            return Err(AuthError::Malformed("a field given twice"));
        }
    }
    Ok(out)
}

fn hex_field<const N: usize>(f: &HashMap<&str, &str>, name: &str) -> Result<[u8; N], AuthError> {
    let v = f
        .get(name)
        .ok_or(AuthError::Malformed("a field is missing"))?;
    let mut out = [0u8; N];
    hex::decode_to_slice(v, &mut out).map_err(|_| AuthError::Malformed("a field is not hex"))?;
    Ok(out)
}

fn time_field(f: &HashMap<&str, &str>) -> Result<u64, AuthError> {
    f.get("t")
        .and_then(|t| t.parse().ok())
        .ok_or(AuthError::Malformed("no time"))
}

fn skew(peer: &str, theirs: u64, now: SystemTime, max: Duration) -> Result<(), AuthError> {
    let by_ms = i64::try_from(i128::from(theirs) - i128::from(millis(now))).unwrap_or(i64::MAX);
    let max_ms = u64::try_from(max.as_millis()).unwrap_or(u64::MAX);
    if by_ms.unsigned_abs() > max_ms {
        return Err(AuthError::Skew {
            peer: peer.to_owned(),
            by_ms,
            max_ms,
        });
    }
    Ok(())
}

/// A hello that was admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// The caller's node name.
    pub from: String,
    nonce: [u8; 16],
}

/// A clock: the system's, or one a test sets apart.
pub type Clock = std::sync::Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// The callee's side: checks hellos and writes welcomes.
pub struct Gate {
    key: ClusterKey,
    me: String,
    max_skew: Duration,
    clock: Clock,
    /// Nonces seen, with the hello's time (ms), forgotten after the bound.
    seen: Mutex<HashMap<[u8; 16], u64>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("me", &self.me)
            .field("max_skew", &self.max_skew)
            .finish_non_exhaustive()
    }
}

impl Gate {
    /// The gate of node `me` with the cluster's key; hellos more than
    /// `max_skew` from this node's clock are refused.
    pub fn new(key: ClusterKey, me: impl Into<String>, max_skew: Duration) -> Gate {
        Gate {
            key,
            me: me.into(),
            max_skew,
            clock: std::sync::Arc::new(SystemTime::now),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// The same gate reading `clock` instead of the system's (a node whose
    /// clock is set apart, in tests).
    pub fn with_clock(mut self, clock: Clock) -> Gate {
        self.clock = clock;
        self
    }

    /// The time by this gate's clock.
    pub fn now(&self) -> SystemTime {
        (self.clock)()
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        &self.me
    }

    /// The cluster key.
    pub fn key(&self) -> &ClusterKey {
        &self.key
    }

    /// Checks a hello (the header's value) at `now`.
    pub fn admit(&self, header: &str, now: SystemTime) -> Result<Admitted, AuthError> {
        let f = fields(header)?;
        let from = *f.get("from").ok_or(AuthError::Malformed("no caller"))?;
        let to = *f.get("to").ok_or(AuthError::Malformed("no callee"))?;
        if !valid_name(from) || !valid_name(to) {
            return Err(AuthError::Malformed("a node name is not valid"));
        }
        let t = time_field(&f)?;
        let nonce: [u8; 16] = hex_field(&f, "n")?;
        let mac: [u8; 32] = hex_field(&f, "mac")?;
        let tt = t.to_string();
        let want = self.key.mac(&[
            b"hello",
            from.as_bytes(),
            to.as_bytes(),
            tt.as_bytes(),
            &nonce,
        ]);
        if !bool::from(want.ct_eq(&mac)) {
            return Err(AuthError::BadMac);
        }
        if to != self.me {
            return Err(AuthError::WrongNode {
                expected: self.me.clone(),
                got: to.to_owned(),
            });
        }
        skew(from, t, now, self.max_skew)?;
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let bound = u64::try_from(self.max_skew.as_millis()).unwrap_or(u64::MAX);
        let oldest = millis(now).saturating_sub(bound.saturating_mul(2));
        if seen.len() >= MAX_REMEMBERED {
            seen.retain(|_, t| *t >= oldest);
        }
        if seen.contains_key(&nonce) {
            return Err(AuthError::Replayed);
        }
        if seen.len() >= MAX_REMEMBERED {
            return Err(AuthError::Busy);
        }
        seen.insert(nonce, t);
        Ok(Admitted {
            from: from.to_owned(),
            nonce,
        })
    }

    /// The welcome that answers an admitted hello.
    pub fn welcome(&self, admitted: &Admitted, now: SystemTime) -> String {
        let t = millis(now).to_string();
        let mac = self.key.mac(&[
            b"welcome",
            self.me.as_bytes(),
            admitted.from.as_bytes(),
            t.as_bytes(),
            &admitted.nonce,
        ]);
        format!("v1 t={t},mac={}", hex::encode(mac))
    }
}

/// The caller's check of a welcome from node `to` to its hello (`from`,
/// `nonce`); `Ok` with the callee's clock minus ours, in milliseconds.
pub fn check_welcome(
    key: &ClusterKey,
    header: &str,
    from: &str,
    to: &str,
    nonce: &[u8; 16],
    now: SystemTime,
    max_skew: Duration,
) -> Result<i64, AuthError> {
    let f = fields(header)?;
    let t = time_field(&f)?;
    let mac: [u8; 32] = hex_field(&f, "mac")?;
    let tt = t.to_string();
    let want = key.mac(&[
        b"welcome",
        to.as_bytes(),
        from.as_bytes(),
        tt.as_bytes(),
        nonce,
    ]);
    if !bool::from(want.ct_eq(&mac)) {
        return Err(AuthError::BadMac);
    }
    skew(to, t, now, max_skew)?;
    Ok(i64::try_from(i128::from(t) - i128::from(millis(now))).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ClusterKey {
        ClusterKey::derive("admin", "a-long-secret").unwrap()
    }

    const SKEW: Duration = Duration::from_secs(60);

    #[test]
    fn a_hello_is_admitted_once_and_welcomed() {
        let gate = Gate::new(key(), "n2:9000", SKEW);
        let now = SystemTime::now();
        let (h, nonce) = hello(&key(), "n1:9000", "n2:9000", now);
        let admitted = gate.admit(&h, now).unwrap();
        assert_eq!(admitted.from, "n1:9000");
        assert_eq!(gate.admit(&h, now), Err(AuthError::Replayed));
        let w = gate.welcome(&admitted, now);
        let skew = check_welcome(&key(), &w, "n1:9000", "n2:9000", &nonce, now, SKEW).unwrap();
        assert_eq!(skew, 0);
        // A welcome for another hello, or from another node, does not check.
        assert_eq!(
            check_welcome(&key(), &w, "n1:9000", "n3:9000", &nonce, now, SKEW),
            Err(AuthError::BadMac)
        );
        assert_eq!(
            check_welcome(&key(), &w, "n1:9000", "n2:9000", &[0; 16], now, SKEW),
            Err(AuthError::BadMac)
        );
    }

    #[test]
    fn hellos_with_another_key_target_or_clock_are_refused() {
        let gate = Gate::new(key(), "n2:9000", SKEW);
        let now = SystemTime::now();
        let other = ClusterKey::derive("admin", "another-secret").unwrap();
        let (h, _) = hello(&other, "n1:9000", "n2:9000", now);
        assert_eq!(gate.admit(&h, now), Err(AuthError::BadMac));
        let (h, _) = hello(&key(), "n1:9000", "n3:9000", now);
        assert!(matches!(
            gate.admit(&h, now),
            Err(AuthError::WrongNode { .. })
        ));
        let (h, _) = hello(&key(), "n1:9000", "n2:9000", now + Duration::from_secs(90));
        let err = gate.admit(&h, now).unwrap_err();
        assert!(
            matches!(err, AuthError::Skew { by_ms: 90_000, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("n1:9000 is 90000 ms ahead"),
            "{err}"
        );
        let (h, _) = hello(&key(), "n1:9000", "n2:9000", now - Duration::from_secs(90));
        let err = gate.admit(&h, now).unwrap_err();
        assert!(err.to_string().contains("behind"), "{err}");
        // A changed field breaks the MAC.
        let (h, _) = hello(&key(), "n1:9000", "n2:9000", now);
        let forged = h.replace("from=n1:9000", "from=n4:9000");
        assert_eq!(gate.admit(&forged, now), Err(AuthError::BadMac));
        for bad in [
            "",
            "v1",
            "v1 from=a",
            "v2 from=a,to=b,t=1,n=00,mac=00",
            "v1 a=1,a=2",
        ] {
            assert!(
                matches!(gate.admit(bad, now), Err(AuthError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn default_and_weak_credentials_derive_no_key() {
        assert_eq!(
            ClusterKey::derive("minioadmin", "minioadmin").unwrap_err(),
            KeyError::Default
        );
        assert_eq!(
            ClusterKey::derive("admin", "short").unwrap_err(),
            KeyError::Weak
        );
        assert_eq!(
            ClusterKey::derive("", "long-enough").unwrap_err(),
            KeyError::Weak
        );
        assert_eq!(format!("{:?}", key()), "ClusterKey(..)");
    }
}
