//! A planned release: when each parked retry is let go, and what load that
//! causes, decided before anything is applied.
//!
//! Unpausing a dependency after an outage lets every held park run at
//! once: ten thousand retries in the first second against a dependency
//! that has just come back. A **ramp** (`--ramp 10,50,200/min`) spreads
//! them: at most 10 in the first minute, 50 in the second, 200 in every
//! minute after (the last rate holds on); a **max rate**
//! (`--max-rate bank=20/min`) caps one dependency throughout. Both may be
//! given; a park then waits for a slot of each.
//!
//! [`plan`] is pure: from the parks to release (their due times and
//! dependencies), the start instant and the rates, it gives the release
//! instant of each park (never before its own due time) and the attempts
//! per minute per dependency with and without the ramp: the preview an
//! operator reads before applying, and what the store then writes (each
//! park's release instant as its timer's due time, so every replica fires
//! it no earlier).
//!
//! Slots: minute `m` of a rate `r` has `r` slots, at `m·60 s + j·60 s / r`
//! (`j` in `0..r`), evenly spread. Parks take slots in the order of their
//! due time (then timer); a park not yet due takes the first free slot at
//! or after its due time. With several rates a park takes the first
//! instant that is a free slot of each (every minute starts with a slot of
//! every rate, so one is always found within the minute).

use std::collections::BTreeMap;

use serde::Serialize;

/// One minute, in ms.
pub const MINUTE_MS: i64 = 60_000;

/// What a release's preview names a park whose timer recorded no
/// dependency (parks armed before qflow recorded one).
pub const NO_DEPENDENCY: &str = "(unrecorded)";

/// Per-minute rates: minute `i` lets `per_minute[i]` parks go, the last
/// one holding on for every later minute. Never empty, never zero.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ramp {
    pub per_minute: Vec<u64>,
    /// The slots before minute `i` (`cum[0] = 0`), for the ramp's minutes.
    #[serde(skip)]
    cum: Vec<u64>,
}

impl Ramp {
    /// A ramp of these per-minute rates (each at least 1; at least one).
    pub fn new(per_minute: Vec<u64>) -> Ramp {
        debug_assert!(!per_minute.is_empty() && per_minute.iter().all(|r| *r > 0));
        let mut cum = vec![0];
        for r in &per_minute {
            cum.push(cum.last().copied().unwrap_or(0) + r);
        }
        Ramp { per_minute, cum }
    }

    /// Parse `--ramp`'s value: a comma list of per-minute rates ending in
    /// `/min` (`10,50,200/min`). An error names the flag, what is wrong
    /// and a literal fix.
    pub fn parse(text: &str) -> Result<Ramp, String> {
        let fix = "write per-minute rates separated by commas, ending in /min, as in --ramp 10,50,200/min";
        let t = text.trim();
        let Some(list) = t.strip_suffix("/min") else {
            let hint = match t.rsplit_once('/') {
                Some((_, unit)) => format!("`/{unit}` is not the unit: a ramp is per minute"),
                None => "it has no unit".to_string(),
            };
            return Err(format!("--ramp {text}: {hint}; {fix}"));
        };
        let mut rates = Vec::new();
        for part in list.split(',') {
            let p = part.trim();
            if p.is_empty() {
                return Err(format!(
                    "--ramp {text}: an empty rate between commas; {fix}"
                ));
            }
            let n: u64 = p.replace('_', "").parse().map_err(|_| {
                format!("--ramp {text}: `{p}` is not a whole number of releases per minute; {fix}")
            })?;
            if n == 0 {
                return Err(format!(
                    "--ramp {text}: a rate of 0 releases nothing (the release would never end): give at least 1, as in --ramp 1,10/min (to hold everything, keep the pause)"
                ));
            }
            rates.push(n);
        }
        Ok(Ramp::new(rates))
    }

    /// `10,50,200/min`: how every face writes it (and the store keeps it).
    pub fn text(&self) -> String {
        let rates: Vec<String> = self.per_minute.iter().map(u64::to_string).collect();
        format!("{}/min", rates.join(","))
    }

    fn rate(&self, minute: u64) -> u64 {
        let i = (minute as usize).min(self.per_minute.len() - 1);
        self.per_minute[i]
    }

    /// The slots before minute `m`.
    fn before(&self, m: u64) -> u64 {
        let n = self.per_minute.len() as u64;
        if m <= n {
            self.cum[m as usize]
        } else {
            self.cum[n as usize] + (m - n) * self.rate(n)
        }
    }

    /// The minute slot `k` (0-based) falls in, and its index there.
    fn minute_of(&self, k: u64) -> (u64, u64) {
        let n = self.per_minute.len() as u64;
        let total = self.cum[n as usize];
        if k >= total {
            let last = self.rate(n);
            let m = n + (k - total) / last;
            return (m, k - self.before(m));
        }
        // The ramp's own minutes: few, so a scan.
        let m = (0..n).rfind(|m| self.cum[*m as usize] <= k).unwrap_or(0);
        (m, k - self.cum[m as usize])
    }

    /// The instant of slot `k`, in ms after the start.
    pub fn slot_ms(&self, k: u64) -> i64 {
        let (m, j) = self.minute_of(k);
        let r = self.rate(m);
        m as i64 * MINUTE_MS + (j as i64 * MINUTE_MS) / r as i64
    }

    /// The first slot at or after `t` ms after the start.
    fn first_at(&self, t: i64) -> u64 {
        let t = t.max(0);
        let m = (t / MINUTE_MS) as u64;
        let r = self.rate(m) as i64;
        let into = t - m as i64 * MINUTE_MS;
        // The least j with ⌊j·60 s / r⌋ ≥ into.
        let j = (into * r + MINUTE_MS - 1) / MINUTE_MS;
        if j >= r {
            self.before(m + 1)
        } else {
            self.before(m) + j as u64
        }
    }
}

/// Parse one `--max-rate DEPENDENCY=N/min`: the dependency and its rate.
pub fn parse_max_rate(text: &str) -> Result<(String, u64), String> {
    let fix = "write DEPENDENCY=N/min, as in --max-rate bank=20/min";
    let Some((dependency, rate)) = text.split_once('=') else {
        return Err(format!("--max-rate {text}: no dependency named; {fix}"));
    };
    let dependency = dependency.trim();
    if dependency.is_empty() {
        return Err(format!(
            "--max-rate {text}: no dependency before `=`; {fix}"
        ));
    }
    let rate = rate.trim();
    let Some(n) = rate.strip_suffix("/min") else {
        return Err(format!(
            "--max-rate {text}: `{rate}` is not per minute; write {dependency}={}/min",
            rate.split('/').next().unwrap_or(rate)
        ));
    };
    let n: u64 = n.trim().replace('_', "").parse().map_err(|_| {
        format!("--max-rate {text}: `{n}` is not a whole number of releases per minute; {fix}")
    })?;
    if n == 0 {
        return Err(format!(
            "--max-rate {text}: a rate of 0 releases nothing: give at least 1, as in --max-rate {dependency}=1/min (to hold it, keep the pause)"
        ));
    }
    Ok((dependency.to_string(), n))
}

/// What a release is shaped by: the ramp over all its parks, and a cap
/// per dependency. Neither: every park goes when due (a plain unpause).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub ramp: Option<Ramp>,
    /// Per dependency, its releases per minute at most.
    pub max_rate: BTreeMap<String, u64>,
}

impl Shape {
    /// Whether it shapes anything.
    pub fn is_none(&self) -> bool {
        self.ramp.is_none() && self.max_rate.is_empty()
    }

    /// `ramp 10,50,200/min, bank at most 20/min`: how every face says it.
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = &self.ramp {
            parts.push(format!("ramp {}", r.text()));
        }
        for (d, n) in &self.max_rate {
            parts.push(format!("{d} at most {n}/min"));
        }
        if parts.is_empty() {
            "no ramp".into()
        } else {
            parts.join(", ")
        }
    }

    /// The max rates as the store keeps them: `bank=20/min,payments=5/min`.
    pub fn max_rate_text(&self) -> String {
        let v: Vec<String> = self
            .max_rate
            .iter()
            .map(|(d, n)| format!("{d}={n}/min"))
            .collect();
        v.join(",")
    }
}

/// One park to release, as the store reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parked {
    pub timer: i64,
    pub instance: String,
    pub dependency: Option<String>,
    /// Its own due time (the run's clock, absolute ms).
    pub due_ms: i64,
}

/// A park's release: when it is let go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Release {
    pub timer: i64,
    pub instance: String,
    pub dependency: Option<String>,
    pub due_ms: i64,
    /// When it is let go (absolute ms, the run's clock): never before
    /// `due_ms`; this is what its timer's due time becomes.
    pub release_ms: i64,
}

/// Attempts per minute per dependency, minute 0 starting at the plan's
/// start: each released park drives one attempt (a channel call's: one
/// delivery, a remote request) when it is let go.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Load {
    pub per_minute: BTreeMap<String, Vec<u64>>,
}

impl Load {
    /// Count one attempt of `dependency` in `minute`.
    pub fn add(&mut self, dependency: &str, minute: usize) {
        let v = self.per_minute.entry(dependency.to_string()).or_default();
        if v.len() <= minute {
            v.resize(minute + 1, 0);
        }
        v[minute] += 1;
    }

    /// The busiest minute of a dependency (0 for one not in it).
    pub fn peak(&self, dependency: &str) -> u64 {
        self.per_minute
            .get(dependency)
            .and_then(|v| v.iter().max().copied())
            .unwrap_or(0)
    }

    /// Minutes until the last release (0 when nothing is released).
    pub fn minutes(&self) -> usize {
        self.per_minute.values().map(Vec::len).max().unwrap_or(0)
    }

    /// Minute `m`'s attempts of a dependency.
    pub fn at(&self, dependency: &str, m: usize) -> u64 {
        self.per_minute
            .get(dependency)
            .and_then(|v| v.get(m).copied())
            .unwrap_or(0)
    }
}

/// A release, planned: each park's release instant, and the load with the
/// shape and without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// Minute 0 starts here (the run's clock, absolute ms).
    pub start_ms: i64,
    pub shape: Shape,
    /// In the order the parks take their slots (due time, then timer).
    pub releases: Vec<Release>,
    /// Every park when due (at once for those due already): an unshaped
    /// release.
    pub without: Load,
    /// With the shape.
    pub with: Load,
}

impl Plan {
    /// The last release instant (the start when nothing is released).
    pub fn end_ms(&self) -> i64 {
        self.releases
            .iter()
            .map(|r| r.release_ms)
            .max()
            .unwrap_or(self.start_ms)
    }

    /// Every dependency of the release, by name.
    pub fn dependencies(&self) -> Vec<String> {
        self.without.per_minute.keys().cloned().collect()
    }
}

/// The name a park's dependency is counted under.
pub fn dependency_name(d: &Option<String>) -> &str {
    d.as_deref().unwrap_or(NO_DEPENDENCY)
}

/// Where one rate's slots have got to: the next free slot.
struct Stream<'a> {
    ramp: &'a Ramp,
    next: u64,
}

impl Stream<'_> {
    /// The first free slot at or after `t`: its index and instant.
    fn at_or_after(&self, t: i64) -> (u64, i64) {
        let k = self.ramp.first_at(t).max(self.next);
        (k, self.ramp.slot_ms(k))
    }
}

/// Plan the release of `parks` from `start_ms` (the run's clock) under
/// `shape`. Pure: the same parks, start and shape give the same plan.
pub fn plan(parks: &[Parked], start_ms: i64, shape: &Shape) -> Plan {
    let mut order: Vec<&Parked> = parks.iter().collect();
    order.sort_by_key(|p| (p.due_ms, p.timer));
    let caps: BTreeMap<&str, Ramp> = shape
        .max_rate
        .iter()
        .map(|(d, n)| (d.as_str(), Ramp::new(vec![*n])))
        .collect();
    let mut ramp = shape.ramp.as_ref().map(|r| Stream { ramp: r, next: 0 });
    let mut per_dep: BTreeMap<&str, Stream<'_>> = caps
        .iter()
        .map(|(d, r)| (*d, Stream { ramp: r, next: 0 }))
        .collect();
    let (mut without, mut with) = (Load::default(), Load::default());
    let mut releases = Vec::with_capacity(order.len());
    let minute = |ms: i64| ((ms - start_ms).max(0) / MINUTE_MS) as usize;
    for p in order {
        let name = dependency_name(&p.dependency);
        let due = (p.due_ms - start_ms).max(0);
        without.add(name, minute(start_ms + due));
        let mut t = due;
        let (mut k_ramp, mut k_dep) = (None, None);
        loop {
            if let Some(s) = &ramp {
                let (k, at) = s.at_or_after(t);
                k_ramp = Some(k);
                t = at;
            }
            match per_dep.get(name) {
                Some(s) => {
                    let (k, at) = s.at_or_after(t);
                    k_dep = Some(k);
                    if at == t {
                        break;
                    }
                    t = at;
                }
                None => break,
            }
            if ramp.is_none() {
                break;
            }
        }
        if let (Some(s), Some(k)) = (&mut ramp, k_ramp) {
            s.next = k + 1;
        }
        if let (Some(s), Some(k)) = (per_dep.get_mut(name), k_dep) {
            s.next = k + 1;
        }
        let release_ms = (start_ms + t).max(p.due_ms);
        with.add(name, minute(release_ms));
        releases.push(Release {
            timer: p.timer,
            instance: p.instance.clone(),
            dependency: p.dependency.clone(),
            due_ms: p.due_ms,
            release_ms,
        });
    }
    Plan {
        start_ms,
        shape: shape.clone(),
        releases,
        without,
        with,
    }
}

/// Where a release's minute 0 starts: the wall clock's now for parks on
/// the wall clock (a served store), else the latest decision the store
/// holds (a store decided on a virtual clock: `run`, `simulate`,
/// `resume`, whose instants count from 0). `latest_decision_ms` is
/// `None` for a store with no decision.
pub fn start_ms(latest_decision_ms: Option<i64>, wall_now_ms: i64) -> i64 {
    match latest_decision_ms {
        Some(ms) if ms < VIRTUAL_EPOCH_LIMIT_MS => ms,
        _ => wall_now_ms,
    }
}

/// Instants before this (2000-01-01 on the wall clock) are a virtual
/// clock's: what the engine's drivers read an instance's clock by too.
pub const VIRTUAL_EPOCH_LIMIT_MS: i64 = 946_684_800_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn parks(n: usize, dep: &str, due_ms: i64) -> Vec<Parked> {
        (0..n)
            .map(|i| Parked {
                timer: i as i64 + 1,
                instance: format!("i-{i}"),
                dependency: Some(dep.into()),
                due_ms,
            })
            .collect()
    }

    fn ramp(text: &str) -> Shape {
        Shape {
            ramp: Some(Ramp::parse(text).unwrap()),
            max_rate: BTreeMap::new(),
        }
    }

    #[test]
    fn a_ramp_lets_each_minute_go_at_its_rate_and_the_last_rate_holds_on() {
        let p = plan(&parks(300, "bank", 0), 1_000, &ramp("10,50,200/min"));
        assert_eq!(p.with.per_minute["bank"], [10, 50, 200, 40]);
        assert_eq!(p.without.per_minute["bank"], [300]);
        assert_eq!(p.with.peak("bank"), 200);
        // Evenly spread within a minute: the first minute's ten, 6 s apart.
        let first: Vec<i64> = p.releases[..3].iter().map(|r| r.release_ms).collect();
        assert_eq!(first, [1_000, 7_000, 13_000]);
        assert_eq!(p.releases[10].release_ms, 61_000);
        assert_eq!(p.end_ms(), p.releases[299].release_ms);
    }

    #[test]
    fn a_park_is_never_released_before_its_own_due_time() {
        let mut ps = parks(5, "bank", 0);
        ps.push(Parked {
            timer: 99,
            instance: "late".into(),
            dependency: Some("bank".into()),
            due_ms: 150_000,
        });
        let p = plan(&ps, 0, &ramp("1/min"));
        let late = p.releases.iter().find(|r| r.timer == 99).unwrap();
        // Its slot (the sixth, at minute 5) is after its due time; one due
        // later than its slot waits for its due time.
        assert_eq!(late.release_ms, 300_000);
        let p = plan(&ps[5..], 0, &ramp("100/min"));
        assert_eq!(p.releases[0].release_ms, 150_000);
        assert!(p.releases.iter().all(|r| r.release_ms >= r.due_ms));
    }

    #[test]
    fn a_max_rate_caps_one_dependency_and_leaves_the_others_to_the_ramp() {
        let mut ps = parks(30, "bank", 0);
        ps.extend(parks(30, "mail", 0).into_iter().map(|mut p| {
            p.timer += 100;
            p
        }));
        let shape = Shape {
            ramp: None,
            max_rate: [("bank".to_string(), 20)].into(),
        };
        let p = plan(&ps, 0, &shape);
        assert_eq!(p.with.per_minute["bank"], [20, 10]);
        assert_eq!(p.with.per_minute["mail"], [30]);
        // Both: each minute holds to the ramp and to the cap.
        let shape = Shape {
            ramp: Some(Ramp::parse("25/min").unwrap()),
            max_rate: [("bank".to_string(), 7)].into(),
        };
        let p = plan(&ps, 0, &shape);
        for m in 0..p.with.minutes() {
            assert!(p.with.at("bank", m) <= 7, "{m}: {:?}", p.with);
            assert!(p.with.at("bank", m) + p.with.at("mail", m) <= 25, "{m}");
        }
        assert_eq!(p.releases.len(), 60);
    }

    #[test]
    fn slots_are_found_from_any_instant() {
        let r = Ramp::parse("3,7/min").unwrap();
        for k in 0..40 {
            let at = r.slot_ms(k);
            assert_eq!(r.first_at(at), k, "{k} at {at}");
            if k > 0 && r.slot_ms(k - 1) < at - 1 {
                assert_eq!(r.first_at(at - 1), k, "{k}");
            }
        }
    }

    #[test]
    fn bad_ramps_name_the_flag_and_the_fix() {
        for (bad, says) in [
            ("10,x/min", "`x` is not a whole number"),
            ("0/min", "a rate of 0 releases nothing"),
            ("10,50", "it has no unit"),
            ("10/s", "`/s` is not the unit"),
            ("10,,5/min", "an empty rate"),
        ] {
            let e = Ramp::parse(bad).unwrap_err();
            assert!(e.starts_with(&format!("--ramp {bad}: ")), "{e}");
            assert!(e.contains(says), "{e}");
            assert!(e.contains("--ramp 1"), "a literal fix: {e}");
        }
        assert_eq!(
            Ramp::parse(" 10,50,200/min ").unwrap().text(),
            "10,50,200/min"
        );
        assert!(parse_max_rate("bank=0/min")
            .unwrap_err()
            .contains("bank=1/min"));
        assert!(parse_max_rate("bank=5").unwrap_err().contains("bank=5/min"));
        assert_eq!(parse_max_rate("bank=5/min").unwrap(), ("bank".into(), 5));
    }

    #[test]
    fn the_start_is_the_store_clock() {
        assert_eq!(start_ms(Some(90_000), 1_800_000_000_000), 90_000);
        assert_eq!(
            start_ms(Some(1_700_000_000_000), 1_800_000_000_000),
            1_800_000_000_000
        );
        assert_eq!(start_ms(None, 5), 5);
    }
}
