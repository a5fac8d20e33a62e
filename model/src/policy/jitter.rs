//! Jitter: each delay drawn per (instance, node, attempt) from a stable hash,
//! so instances that failed together spread out and a rerun of one instance
//! waits exactly the same times.

use std::time::Duration;

use super::schedule::from_nanos_saturating;
use super::RetryPolicy;

/// Randomisation of each delay, deterministic per (instance, node, attempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// The delay as computed.
    None,
    /// Uniform in `[0, d]`.
    Full,
    /// `d/2` plus uniform in `[0, d/2]`.
    Equal,
}

impl Jitter {
    /// The attribute value that selects this mode (`jitter="full"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
        }
    }
}

impl RetryPolicy {
    /// The wait before `attempt` for one instance's node, jittered as the
    /// runtime waits it. Deterministic: the same arguments give the same delay
    /// on every machine and every run.
    pub fn delay_with_jitter(&self, attempt: u32, instance_id: &str, node_id: &str) -> Duration {
        let d = self.delay_before(attempt);
        let u = jitter_unit(instance_id, node_id, attempt);
        match self.jitter {
            Jitter::None => d,
            Jitter::Full => scale(d, u),
            Jitter::Equal => {
                let half = d / 2;
                half + scale(d - half, u)
            }
        }
    }

    /// The smallest and largest wait before `attempt` this policy's jitter allows.
    pub fn jitter_bounds(&self, attempt: u32) -> (Duration, Duration) {
        let d = self.delay_before(attempt);
        match self.jitter {
            Jitter::None => (d, d),
            Jitter::Full => (Duration::ZERO, d),
            Jitter::Equal => (d / 2, d),
        }
    }
}

/// `d × u` for `u` in `[0, 1]` given as a 64-bit fraction (`u / 2^64`, with
/// `u64::MAX` mapping to all of `d`).
fn scale(d: Duration, u: u64) -> Duration {
    let span = d.as_nanos();
    let n = (u128::from(u) * (span + 1)) >> 64;
    from_nanos_saturating(n.min(span))
}

/// The jitter draw for (instance, node, attempt): 64 uniform bits from a
/// stable hash (FNV-1a over the three, then the SplitMix64 finaliser). Stable
/// across Rust versions, platforms and runs, unlike std's `RandomState`; part
/// of qflow's contract, since a rerun must wait the same times.
pub fn jitter_unit(instance_id: &str, node_id: &str, attempt: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    feed(instance_id.as_bytes());
    feed(&[0xff]);
    feed(node_id.as_bytes());
    feed(&[0xff]);
    feed(&attempt.to_le_bytes());
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::dbg08_list;

    #[test]
    fn jitter_is_deterministic_and_bounded() {
        let mut p = dbg08_list();
        p.jitter = Jitter::Full;
        let a = p.delay_with_jitter(3, "inst-1", "charge");
        assert_eq!(a, p.delay_with_jitter(3, "inst-1", "charge"));
        assert!(a <= Duration::from_secs(300));
        // Different instances spread out.
        let spread: std::collections::BTreeSet<Duration> = (0..50)
            .map(|i| p.delay_with_jitter(3, &format!("inst-{i}"), "charge"))
            .collect();
        assert!(spread.len() > 40);
        p.jitter = Jitter::Equal;
        for i in 0..50 {
            let d = p.delay_with_jitter(3, &format!("inst-{i}"), "charge");
            assert!(d >= Duration::from_secs(150) && d <= Duration::from_secs(300));
        }
        assert_eq!(
            p.jitter_bounds(3),
            (Duration::from_secs(150), Duration::from_secs(300))
        );
        let s = p.worst_case(Duration::ZERO).attempts;
        assert_eq!(s[2].since_first_min, Duration::from_secs(30 + 150));
        assert_eq!(s[2].since_first_max, Duration::from_secs(360));
        // A pinned value: the hash is part of the contract (reruns wait the same).
        assert_eq!(
            jitter_unit("inst-1", "charge", 2),
            jitter_unit("inst-1", "charge", 2)
        );
        assert_ne!(
            jitter_unit("inst-1", "charge", 2),
            jitter_unit("inst-1", "charge", 3)
        );
        assert_eq!(jitter_unit("a", "b", 1), 0x08d3_7b2e_c652_ccc1);
    }
}
