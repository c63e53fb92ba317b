//! What a run will cost the target's quota, as `tminus validate` prints it:
//! each check's most requests per credential (`context::budget`), each
//! suite's total, and with a quota (declared in the suite, or `--quota`) the
//! least wall time that quota implies.

use std::fmt::Write;
use std::time::Duration;

use crate::context::budget::Requests;
use crate::http::quota::{fmt_wait, DeclaredQuota};
use crate::plan::Plan;

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
                "    at {q}: at least {} of wall time waiting for windows, if every request counts (paths outside the limiter, such as health checks, do not)",
                fmt_wait(lower_bound(n, q))
            );
        }
    }
    out
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
}
