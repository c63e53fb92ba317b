//! The judgement of `auth.sandbox_isolated`, apart from sending: what each
//! probe got in each environment, read as a verdict per property. Kept pure
//! so every rule (a 2xx on production fails, 401/403 passes, a 5xx or a
//! timeout is inconclusive, a moved counter fails) is unit-tested.

use crate::families::common::counter_moved;
use crate::outcome::Assertion;

/// What one request got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A response: its status and its one-line description (status and
    /// request id).
    Status { status: u16, shown: String },
    /// No response within the request's timeout.
    TimedOut,
}

impl Answer {
    fn is_success(&self) -> bool {
        matches!(self, Answer::Status { status, .. } if (200..300).contains(status))
    }
    fn is_refusal(&self) -> bool {
        matches!(
            self,
            Answer::Status {
                status: 401 | 403,
                ..
            }
        )
    }
    fn shown(&self) -> String {
        match self {
            Answer::Status { shown, .. } => shown.clone(),
            Answer::TimedOut => "no answer (timed out)".to_owned(),
        }
    }
}

/// One probe sent with one credential: to its own environment (the
/// control: the credential works there), to the other environment without
/// any credential (the control: the route is not public there), and to the
/// other environment with the credential (the test).
#[derive(Debug, Clone)]
pub struct Crossing {
    /// The request as sent to the other environment (`GET https://...`).
    pub request: String,
    pub own: Answer,
    pub anonymous: Answer,
    pub crossed: Answer,
}

/// Which way a set of crossings went, for messages.
#[derive(Debug, Clone, Copy)]
pub struct Direction {
    /// `the sandbox credential`
    pub credential: &'static str,
    /// `the sandbox`: where the credential belongs.
    pub home: &'static str,
    /// `production`: where it must be refused.
    pub other: &'static str,
}

pub const SANDBOX_TO_PRODUCTION: Direction = Direction {
    credential: "the sandbox credential",
    home: "the sandbox",
    other: "production",
};

pub const PRODUCTION_TO_SANDBOX: Direction = Direction {
    credential: "the production credential",
    home: "production",
    other: "the sandbox",
};

/// `property` holds when the other environment refused the credential
/// (401 or 403) on every probe that was exercised (the credential works at
/// home, the route is not served there without one). A 2xx fails, naming
/// the request; a 5xx, a timeout, a redirect or any other answer is
/// inconclusive; a probe that was not exercised makes the property an
/// error, never a pass. `note` is appended to the pass message.
pub fn refused(
    property: &'static str,
    d: Direction,
    crossings: &[Crossing],
    note: &str,
) -> Assertion {
    let mut accepted = Vec::new();
    let mut unclear = Vec::new();
    let mut unexercised = Vec::new();
    let mut refusals = Vec::new();
    for c in crossings {
        if c.anonymous.is_success() {
            unexercised.push(format!(
                "{} serves {} without any credential ({}), so its answer to {} proves nothing",
                d.other,
                c.request,
                c.anonymous.shown(),
                d.credential
            ));
            continue;
        }
        if c.crossed.is_success() {
            accepted.push(format!("{} got {}", c.request, c.crossed.shown()));
            continue;
        }
        if !c.own.is_success() {
            unexercised.push(format!(
                "{} does not accept its own credential on this probe ({}), so a refusal by {} proves nothing ({})",
                d.home,
                c.own.shown(),
                d.other,
                c.request
            ));
            continue;
        }
        if matches!(c.anonymous, Answer::TimedOut) {
            unclear.push(format!(
                "{} without a credential: no answer (timed out)",
                c.request
            ));
            continue;
        }
        if c.crossed.is_refusal() {
            refusals.push(format!("{} got {}", c.request, c.crossed.shown()));
        } else {
            unclear.push(format!(
                "{} got {}: neither accepted nor refused (401/403)",
                c.request,
                c.crossed.shown()
            ));
        }
    }
    if !accepted.is_empty() {
        return Assertion::fail(
            property,
            format!(
                "{} accepted {}: {}",
                d.other,
                d.credential,
                accepted.join("; ")
            ),
            "401 or 403",
            format!(
                "a 2xx on {} of {} probe(s)",
                accepted.len(),
                crossings.len()
            ),
        );
    }
    if !unexercised.is_empty() {
        return Assertion::not_exercised(property, unexercised.join("; "));
    }
    if !unclear.is_empty() {
        return Assertion::inconclusive(
            property,
            format!(
                "{} neither accepted nor refused {}: {}",
                d.other,
                d.credential,
                unclear.join("; ")
            ),
        );
    }
    if refusals.is_empty() {
        return Assertion::not_exercised(property, "no probe was sent");
    }
    Assertion::pass(
        property,
        format!(
            "{} refused {} on every probe ({}){note}",
            d.other,
            d.credential,
            refusals.join("; ")
        ),
    )
}

/// Production's side-effect counter around the sandbox credential's probes.
#[derive(Debug, Clone)]
pub struct CounterReading {
    /// The counter as the suite names it (its JSON path).
    pub name: String,
    pub before: i64,
    pub after: i64,
}

/// `nothing_created`: the counter did not move while `sent` probes with
/// the sandbox credential went to production. Without a counter it is not
/// judged, and says the side effect was not observed; a probe that timed
/// out (`pending`) could still create something after the read, and a
/// counter that moved by more than `sent` counts other traffic: both are
/// inconclusive.
pub fn nothing_created(counter: Option<&CounterReading>, sent: u64, pending: bool) -> Assertion {
    const P: &str = "nothing_created";
    let Some(c) = counter else {
        return Assertion::skipped(
            P,
            "not observed: no side-effect counter on production was given (`production.effects`), so whether the sandbox credential created anything there was not seen",
        );
    };
    let moved = match counter_moved(c.before, c.after, Some(sent), &c.name) {
        Ok(m) => m,
        Err(e) => return Assertion::inconclusive(P, e),
    };
    if moved > 0 {
        return Assertion::fail(
            P,
            format!(
                "production's side-effect counter {} moved by {moved} ({} to {}) while {sent} probe(s) with the sandbox credential were sent there: the sandbox credential created something on production",
                c.name, c.before, c.after
            ),
            format!("{} (unchanged)", c.before),
            c.after.to_string(),
        );
    }
    if pending {
        return Assertion::inconclusive(
            P,
            format!(
                "production's side-effect counter {} did not move, but a probe timed out and could still act after the read",
                c.name
            ),
        );
    }
    Assertion::pass(
        P,
        format!(
            "production's side-effect counter {} stayed at {} while {sent} probe(s) with the sandbox credential were sent there",
            c.name, c.before
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;

    fn st(status: u16) -> Answer {
        Answer::Status {
            status,
            shown: status.to_string(),
        }
    }

    fn crossing(own: Answer, anonymous: Answer, crossed: Answer) -> Crossing {
        Crossing {
            request: "GET http://prod/x".into(),
            own,
            anonymous,
            crossed,
        }
    }

    fn judge(c: Crossing) -> Assertion {
        refused("p", SANDBOX_TO_PRODUCTION, &[c], "")
    }

    #[test]
    fn a_2xx_on_production_fails_naming_the_request() {
        let a = judge(crossing(st(200), st(401), st(200)));
        assert_eq!(a.verdict, Verdict::Fail);
        assert!(
            a.message.contains("GET http://prod/x got 200"),
            "{}",
            a.message
        );
        assert!(a
            .message
            .contains("production accepted the sandbox credential"));
        // Even when the sandbox refuses its own credential: production took it.
        assert_eq!(
            judge(crossing(st(401), st(401), st(201))).verdict,
            Verdict::Fail
        );
    }

    #[test]
    fn a_401_or_403_passes() {
        for s in [401, 403] {
            let a = judge(crossing(st(200), st(401), st(s)));
            assert_eq!(a.verdict, Verdict::Pass, "{s}: {}", a.message);
        }
    }

    #[test]
    fn a_5xx_a_timeout_or_another_answer_is_inconclusive() {
        for crossed in [
            st(500),
            st(503),
            Answer::TimedOut,
            st(404),
            st(301),
            st(429),
        ] {
            let a = judge(crossing(st(200), st(401), crossed.clone()));
            assert_eq!(a.verdict, Verdict::Error, "{crossed:?}");
            assert!(a.inconclusive, "{crossed:?}: {}", a.message);
        }
        let a = judge(crossing(st(200), Answer::TimedOut, st(401)));
        assert!(a.verdict == Verdict::Error && a.inconclusive);
    }

    #[test]
    fn a_refusal_is_no_evidence_without_the_controls() {
        // The sandbox refuses its own credential: every key is refused.
        let a = judge(crossing(st(401), st(401), st(401)));
        assert_eq!(a.verdict, Verdict::Error);
        assert!(!a.inconclusive);
        assert!(a.message.contains("does not accept its own credential"));
        // Production serves the route to anyone: a 200 proves nothing.
        let a = judge(crossing(st(200), st(200), st(200)));
        assert_eq!(a.verdict, Verdict::Error);
        assert!(
            a.message.contains("without any credential"),
            "{}",
            a.message
        );
        assert_eq!(
            refused("p", SANDBOX_TO_PRODUCTION, &[], "").verdict,
            Verdict::Error
        );
    }

    #[test]
    fn one_accepted_probe_among_refused_ones_fails() {
        let mut c = vec![crossing(st(200), st(401), st(401))];
        c.push(Crossing {
            request: "HEAD http://prod/y".into(),
            ..crossing(st(200), st(403), st(204))
        });
        let a = refused("p", PRODUCTION_TO_SANDBOX, &c, "");
        assert_eq!(a.verdict, Verdict::Fail);
        assert!(
            a.message.contains(
                "the sandbox accepted the production credential: HEAD http://prod/y got 204"
            ),
            "{}",
            a.message
        );
    }

    #[test]
    fn a_moved_counter_fails_and_no_counter_is_not_observed() {
        let c = |before, after| CounterReading {
            name: "$.count".into(),
            before,
            after,
        };
        assert_eq!(
            nothing_created(Some(&c(3, 3)), 2, false).verdict,
            Verdict::Pass
        );
        let a = nothing_created(Some(&c(3, 4)), 2, false);
        assert_eq!(a.verdict, Verdict::Fail);
        assert!(a.message.contains("moved by 1 (3 to 4)"), "{}", a.message);
        // More than the probes could have made: other traffic, no evidence.
        let a = nothing_created(Some(&c(3, 10)), 2, false);
        assert!(
            a.verdict == Verdict::Error && a.inconclusive,
            "{}",
            a.message
        );
        let a = nothing_created(Some(&c(3, 3)), 2, true);
        assert!(a.verdict == Verdict::Error && a.inconclusive);
        let a = nothing_created(None, 2, false);
        assert_eq!(a.verdict, Verdict::Skipped);
        assert!(a.message.starts_with("not observed"), "{}", a.message);
    }
}
