//! What a run will cost the target's quota, as `tminus validate` prints it:
//! each check's most requests per credential (`context::budget`), each
//! suite's total, and with a quota (declared in the suite, or `--quota`) two
//! figures of wall time: the maximum's (every check's most requests, each
//! exhausting check its own window) and the inherent bound ([`inherent`]:
//! what the checks must send, one exhaustion of the limit, and the window
//! resets that must be waited for), which `run` reports its wall time
//! against (`run::bound_note`).

use std::fmt::Write;
use std::time::Duration;

use crate::context::budget::{Need, Requests};
use crate::http::quota::{fmt_wait, DeclaredQuota};
use crate::plan::{Plan, PlannedSuite};

/// What a storm against `limit` costs the quota: it is served at most the
/// rest of the window it starts in plus one whole window (it stops at the
/// limit), plus its `stop_after` limited answers, which the reference and
/// most limiters do not count.
fn storm_cost(limit: u64, stop_after: u64) -> u64 {
    limit + stop_after
}

/// The least time `requests` take under `q`: every window after the first
/// full one must be waited for.
pub fn lower_bound(requests: u64, q: DeclaredQuota) -> Duration {
    if requests <= q.limit {
        return Duration::ZERO;
    }
    q.window * ((requests - 1) / q.limit) as u32
}

/// What a suite cannot do with less under a quota: the requests its
/// checks must have served, whether it reaches the limit (one exhaustion
/// per credential serves every check that needs it: `run::order`), and the
/// window resets it must wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inherent {
    /// Requests of the suite's credential the checks that need served
    /// answers must send (their figures without spares; paths outside the
    /// limiter left out).
    pub requests: u64,
    /// Checks left out because their requests go outside the limiter.
    pub outside: Vec<String>,
    /// A check drives the limit to its end (one exhaustion).
    pub exhausts: bool,
    /// Window resets the run must wait for: every window the requests fill
    /// but the last (which the exhaustion fills up), and the last's reset
    /// when a check waits for it (`rate_limit.recovery`).
    pub waits: u64,
}

impl Inherent {
    /// The least wall time: every wait a whole window but the first, which
    /// is what is left of the window the run begins in (`first`: `None`,
    /// unknown before the run, counted as nothing).
    pub fn least(&self, q: DeclaredQuota, first: Option<Duration>) -> Duration {
        match self.waits {
            0 => Duration::ZERO,
            n => q.window * (n - 1) as u32 + first.unwrap_or(Duration::ZERO).min(q.window),
        }
    }
}

/// The first segment of a path (`/public/v1/x` -> `public`).
fn first_segment(path: &str) -> &str {
    path.trim_start_matches('/')
        .split(['/', '?'])
        .next()
        .unwrap_or("")
}

/// The inherent bound of `suite` under `q`. Which paths the limiter counts
/// is known only to the target; a suite's rate-limit checks say where they
/// reach it, and a check whose every path is under another first segment
/// (a health check's 1,000 probes, deliveries to the integrator's webhook
/// receiver) is left out, by name.
pub fn inherent(suite: &PlannedSuite, q: DeclaredQuota) -> Inherent {
    let scope: Option<String> = suite
        .checks
        .iter()
        .find_map(|c| c.body.limit_path())
        .map(|p| first_segment(&p).to_owned());
    let mut requests = 0u64;
    let mut outside = Vec::new();
    for c in &suite.checks {
        let r = c.body.requests();
        if !r.need.served() {
            continue;
        }
        let away = match (&scope, c.body.paths()) {
            (Some(s), Some(paths)) => paths.iter().all(|p| first_segment(p) != s),
            _ => false,
        };
        if away {
            outside.push(c.id.clone());
        } else {
            requests += r.own.saturating_sub(r.spare);
        }
    }
    Inherent::of(requests, outside, exhausts(suite), q)
}

impl Inherent {
    /// The bound of `requests` served, then (`exhausts`) one exhaustion and
    /// (`reset`) a wait for its reset. Served requests fill whole windows;
    /// the exhaustion fills the rest of the last, so only its reset adds a
    /// wait.
    pub fn of(
        requests: u64,
        outside: Vec<String>,
        (exhausts, reset): (bool, bool),
        q: DeclaredQuota,
    ) -> Inherent {
        // The windows the served requests touch (the exhaustion reaches
        // the limit in the last one, at once when it is full), each but the
        // last waited for, and the last too when a check waits for the
        // exhaustion's reset.
        let touched = requests.div_ceil(q.limit).max(1);
        let waits = touched - 1 + u64::from(exhausts && reset);
        Inherent {
            requests,
            outside,
            exhausts,
            waits,
        }
    }
}

/// Whether a suite's checks reach the limit, and wait for its reset.
pub fn exhausts(suite: &PlannedSuite) -> (bool, bool) {
    let needs = suite.checks.iter().map(|c| c.body.requests().need);
    needs.fold((false, false), |(e, r), n| {
        (e || !n.served(), r || n == Need::Reset)
    })
}

/// The budget table, one line per check, a total per suite.
pub fn report(plan: &Plan, quota: Option<DeclaredQuota>) -> String {
    let mut out =
        String::from("request budget (most requests per credential: own / second tenant):\n");
    for s in &plan.suites {
        let q = quota.or(s.rate_limit);
        let mut total = Requests::default();
        let mut storms = 0u64;
        let mut storm_requests = 0u64;
        let _ = writeln!(out, "  {}:", s.name);
        for c in &s.checks {
            let r = c.body.requests();
            total.own += r.own;
            total.second += r.second;
            let line = match r.exhausts {
                Some(extra) => {
                    storms += 1;
                    match q {
                        Some(q) => {
                            let n = storm_cost(q.limit, extra);
                            storm_requests += n;
                            format!("up to {n} (sized from the limit {q})")
                        }
                        None => "sized from the advertised limit".to_owned(),
                    }
                }
                None if r.second > 0 => format!("{} / {}", r.own, r.second),
                None => r.own.to_string(),
            };
            let _ = writeln!(out, "    {:<40} {line}", c.id);
        }
        let _ = write!(
            out,
            "    total: {} request(s) of the suite's credential",
            total.own + storm_requests
        );
        if total.second > 0 {
            let _ = write!(out, ", {} of the second tenant", total.second);
        }
        if storms > 0 && q.is_none() {
            let _ = write!(
                out,
                ", plus {storms} check(s) that exhaust the quota (each about the limit plus a tenth)"
            );
        }
        out.push('\n');
        if let Some(q) = q {
            let n = total.own + storm_requests;
            let _ = writeln!(
                out,
                "    at {q}: at least {} of wall time waiting for windows, if every request counts (paths outside the limiter, such as health checks, do not) and each exhausting check uses a window of its own",
                fmt_wait(lower_bound(n, q))
            );
            let i = inherent(s, q);
            let _ = writeln!(out, "    {}", inherent_line(&i, q));
        }
    }
    out
}

/// The inherent bound in words: what must be sent, what must be waited.
pub fn inherent_line(i: &Inherent, q: DeclaredQuota) -> String {
    let mut line = format!(
        "inherent at {q}: {} request(s) must be served (the checks' planned figures; `run` prints the bound from what the limiter counted)",
        i.requests
    );
    if i.exhausts {
        line.push_str(", then one exhaustion of the limit (the rest of that window)");
    }
    if !i.outside.is_empty() {
        let _ = write!(
            line,
            " ({} not counted: outside the limiter the rate-limit checks reach)",
            i.outside.join(", ")
        );
    }
    match i.waits {
        0 => line.push_str("; no window reset to wait for"),
        1 => {
            let _ = write!(
                line,
                "; 1 window reset to wait for: what is left of the window the run begins in (up to {})",
                fmt_wait(q.window)
            );
        }
        n => {
            let _ = write!(
                line,
                "; {n} window resets to wait for: at least {} if the checks send all of them, plus what is left of the window the run begins in (up to {})",
                fmt_wait(i.least(q, None)),
                fmt_wait(q.window)
            );
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_counts_whole_windows() {
        let q = DeclaredQuota {
            limit: 60,
            window: Duration::from_secs(60),
        };
        assert_eq!(lower_bound(60, q), Duration::ZERO);
        assert_eq!(lower_bound(61, q), Duration::from_secs(60));
        assert_eq!(lower_bound(180, q), Duration::from_secs(120));
        assert_eq!(lower_bound(181, q), Duration::from_secs(180));
    }

    #[test]
    fn the_inherent_bound_counts_one_exhaustion_and_its_reset() {
        let q = DeclaredQuota {
            limit: 60,
            window: Duration::from_secs(60),
        };
        // 176 served requests fill three windows, the exhaustion the rest
        // of the third, and the recovery waits for its reset.
        let i = Inherent::of(176, vec![], (true, true), q);
        assert_eq!(i.waits, 3);
        assert_eq!(i.least(q, None), Duration::from_secs(120));
        assert_eq!(
            i.least(q, Some(Duration::from_secs(20))),
            Duration::from_secs(140)
        );
        // No recovery: the block need not end.
        assert_eq!(Inherent::of(176, vec![], (true, false), q).waits, 2);
        // A full last window: the limit is reached there at once.
        assert_eq!(Inherent::of(120, vec![], (true, true), q).waits, 2);
        assert_eq!(Inherent::of(0, vec![], (true, true), q).waits, 1);
        // 2,000 a minute: the gate's served requests fit the first window.
        let big = DeclaredQuota { limit: 2000, ..q };
        assert_eq!(Inherent::of(300, vec![], (true, true), big).waits, 1);
        // Nothing exhausted: the windows the requests fill after the first.
        assert_eq!(Inherent::of(120, vec![], (false, false), q).waits, 1);
        assert_eq!(Inherent::of(121, vec![], (false, false), q).waits, 2);
        assert_eq!(Inherent::of(0, vec![], (false, false), q).waits, 0);
    }
}
