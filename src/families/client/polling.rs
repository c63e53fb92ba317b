//! `client.polling` (catalogue POLL-003): the polling fallback from the
//! client's side. The upstream serves a cursor list (`GET path`, BOTIX's
//! `meta.next_cursor`) of `pages` pages under a rate limit of `limit`
//! requests per `window` (X-RateLimit-* on every answer, 429 beyond it),
//! and the judge reads the client's walk:
//! - `follows_cursor`: each page is asked with the cursor the last page
//!   delivered handed out (a page replaced by a 429 delivered nothing; the
//!   same cursor is asked again), up to the page whose cursor is null;
//! - `stops_at_end`: nothing is asked after that page (a loop that reads
//!   an empty cursor as "start again" polls for ever);
//! - `paces_to_remaining`: as RETRY-006, at most `limit` requests in the
//!   first window and never a 429.
//!
//! The pages are served in order whatever cursor is asked (the mock is a
//! script, not a store): the judge follows what each answer delivered, so
//! a client that skips or repeats a cursor is seen by its query, not by
//! the page it got.

use std::time::Duration;

use super::exec::{stderr_note, RunRecord};
use super::judge::not_served;
use super::plan::{dur, one, ClientPlan, Judge};
use super::spec::{defaults, PollingSpec};
use crate::context::PlanCtx;
use crate::outcome::{Assertion, Outcome};
use crate::upstream::{Attempt, RateWindow, Reply, RouteScript, Script, Served, Step};

/// The cursor page `i` (0-based) hands out: `c1`, `c2`, ...; `None` for
/// the last page.
fn next_cursor(i: usize, pages: usize) -> Option<String> {
    (i + 1 < pages).then(|| format!("c{}", i + 1))
}

/// Page `i` of `pages`: two events and its cursor.
fn page(i: usize, pages: usize) -> Step {
    let next = match next_cursor(i, pages) {
        Some(c) => format!("\"{c}\""),
        None => "null".into(),
    };
    Step::reply(Reply {
        body: format!(
            r#"{{"data":[{{"id":"evt_{}"}},{{"id":"evt_{}"}}],"meta":{{"next_cursor":{next}}}}}"#,
            2 * i + 1,
            2 * i + 2
        ),
        content_type: "application/json".into(),
        ..Reply::status(200)
    })
}

impl PlanCtx<'_> {
    pub fn client_polling(&mut self, s: &PollingSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        let limit = s.limit.unwrap_or(defaults::LIMIT).max(1);
        let window = dur(&s.window, defaults::WINDOW);
        if window < Duration::from_millis(500) {
            self.error(s.id.referenced, "`window` must be at least 500ms");
        }
        let pages = s.pages.unwrap_or(defaults::PAGES);
        if pages <= limit || pages > 100 {
            self.error(
                s.id.referenced,
                format!("`pages` must be more than `limit` ({limit}), so a client that does not pace itself meets the limit, and at most 100"),
            );
        }
        let pages = pages.clamp(1, 100) as usize;
        let path = s
            .path
            .clone()
            .unwrap_or_else(|| defaults::POLL_PATH.to_owned());
        if !path.starts_with('/') {
            self.error(s.id.referenced, "`path` must start with `/`");
        }
        let cursor_param = s
            .cursor_param
            .clone()
            .unwrap_or_else(|| defaults::CURSOR_PARAM.to_owned());
        let script = Script {
            routes: vec![RouteScript {
                method: Some("GET".into()),
                path: Some(path),
                steps: (0..pages).map(|i| page(i, pages)).collect(),
                // Past the end: the last page again (null cursor), as a list
                // asked from its start with nothing new would answer.
                then: page(pages - 1, pages),
                rate_limit: Some(RateWindow { limit, window }),
                inject: None,
            }],
            hang_cap: None,
            herd: None,
        };
        let mut p = self.client_plan(
            cmd,
            one("polled", script),
            Judge::Polling {
                cursor_param,
                pages,
                limit,
                window,
            },
        );
        // Every page, a retry per page, and a few more show a loop.
        p.stop_after_attempts = Some(2 * pages + 4);
        p
    }
}

/// The cursor an attempt asked for (`None`: no such parameter or empty).
fn asked(a: &Attempt, param: &str) -> Option<String> {
    a.query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find(|(k, _)| *k == param)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
}

/// `#1 +0.000s cursor=- -> 200; #2 +0.501s cursor=c1 -> 429 ...`
fn walk(a: &[&Attempt], param: &str) -> String {
    let first = a.first().map(|x| x.at).unwrap_or_default();
    let parts: Vec<String> = a
        .iter()
        .enumerate()
        .take(30)
        .map(|(i, x)| {
            format!(
                "#{} +{:.3}s {param}={} -> {}",
                i + 1,
                x.at.saturating_sub(first).as_secs_f64(),
                asked(x, param).as_deref().unwrap_or("-"),
                x.answer.short()
            )
        })
        .collect();
    let more = if a.len() > 30 {
        format!("; ... {} more", a.len() - 30)
    } else {
        String::new()
    };
    format!("{}{more}", parts.join("; "))
}

pub fn judge(
    runs: &[RunRecord],
    param: &str,
    pages: usize,
    limit: u32,
    window: Duration,
) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let all = r.of(res.client);
    let a: Vec<&Attempt> = all.iter().copied().filter(|x| x.is_scripted()).collect();
    if a.is_empty() {
        return Outcome::error(not_served("pages of the cursor list", &all) + &stderr_note(res));
    }
    let seen = walk(&a, param);
    // Follow what each answer delivered: the cursor due next, and where the
    // page with a null cursor was delivered.
    let mut due: Option<String> = None;
    let mut wrong: Option<String> = None;
    let mut end: Option<usize> = None;
    let mut delivered = 0usize;
    for (n, x) in a.iter().enumerate() {
        let got = asked(x, param);
        if got != due && wrong.is_none() {
            wrong = Some(format!(
                "request #{} asked {param}={} where the page before handed out {}",
                n + 1,
                got.as_deref().unwrap_or("(none)"),
                due.as_deref().unwrap_or("none (the first page)")
            ));
        }
        if !x.answer.is_success() {
            continue;
        }
        delivered += 1;
        due = match x.served {
            Served::Step { index, .. } => next_cursor(index, pages),
            _ => None,
        };
        if due.is_none() {
            end = Some(n);
            break;
        }
    }
    let follows = match (&wrong, end) {
        (Some(w), _) => Assertion::fail(
            "follows_cursor",
            format!("{w}: a cursor not followed skips or repeats items; {seen}"),
            "each page asked with the cursor the page before handed out",
            w.clone(),
        ),
        (None, None) => Assertion::fail(
            "follows_cursor",
            format!(
                "the walk stopped after {delivered} page(s): the page whose next_cursor is null was never asked for (the client {}){}; {seen}",
                res.describe(),
                stderr_note(res)
            ),
            format!("the list walked to its end ({pages} pages)"),
            format!("{delivered} page(s)"),
        ),
        (None, Some(_)) => Assertion::pass(
            "follows_cursor",
            format!("{delivered} page(s) asked with the cursor each page before handed out, to the null cursor"),
        ),
    };
    let stops = match end {
        None => Assertion::not_exercised(
            "stops_at_end",
            "the client never reached the page whose next_cursor is null",
        ),
        Some(e) => {
            let after = a.len() - e - 1;
            Assertion::check(
                "stops_at_end",
                after == 0,
                "no request after the page whose next_cursor is null",
                format!("{after} request(s) after the page whose next_cursor is null: the polling loop does not stop at an empty cursor; {seen}"),
                "no request after the last page",
                format!("{after} more"),
            )
        }
    };
    let start = a[0].at;
    let in_window = a.iter().filter(|x| x.at < start + window).count();
    let limited = a.iter().filter(|x| x.answer.status() == Some(429)).count();
    let paces = if a.len() <= limit as usize && limited == 0 {
        Assertion::not_exercised(
            "paces_to_remaining",
            format!(
                "the client sent {} request(s), not more than the limit of {limit}: nothing shows whether it paces itself",
                a.len()
            ),
        )
    } else {
        Assertion::check(
            "paces_to_remaining",
            in_window <= limit as usize && limited == 0,
            format!(
                "{in_window} requests in the first {} window (limit {limit}), no 429 in {}",
                crate::fmt_duration(window),
                a.len()
            ),
            format!(
                "the polling loop spent past X-RateLimit-Remaining: {in_window} requests in the first {} window of {limit}, {limited} answered 429; {seen}",
                crate::fmt_duration(window)
            ),
            format!("at most {limit} requests before the reset (Remaining: {} after the first)", limit - 1),
            format!("{in_window} requests, {limited} x 429"),
        )
    };
    Outcome::judged(vec![follows, stops, paces])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::client::process::{ClientRunResult, Ended};
    use crate::upstream::Answer;

    /// Attempts `(offset s, cursor asked, status, step index or None for then)`.
    fn runs(xs: &[(f64, &str, u16, Option<usize>)]) -> Vec<RunRecord> {
        let attempts = xs
            .iter()
            .map(|(at, cursor, status, index)| Attempt {
                client: 0,
                at: Duration::from_secs_f64(*at),
                answered_at: Duration::from_secs_f64(*at),
                method: "GET".into(),
                path: "/public/v1/events".into(),
                query: if cursor.is_empty() {
                    String::new()
                } else {
                    format!("limit=2&cursor={cursor}")
                },
                headers: Vec::new(),
                body_sha256: String::new(),
                body_len: 0,
                content_type: None,
                idempotency_key: None,
                answer: Answer::Status {
                    status: *status,
                    retry_after: None,
                    form: None,
                },
                answer_headers: Vec::new(),
                injected: None,
                served: match index {
                    Some(i) => Served::Step {
                        route: 0,
                        index: *i,
                    },
                    None => Served::Then { route: 0 },
                },
            })
            .collect();
        vec![RunRecord {
            label: "polled".into(),
            results: vec![ClientRunResult {
                client: 0,
                ended: Ended::Exited(Some(0)),
                elapsed: Duration::from_secs(4),
                stderr_tail: String::new(),
            }],
            attempts,
            control: Vec::new(),
            cpu: None,
        }]
    }

    fn verdicts(o: &Outcome) -> Vec<(&str, crate::outcome::Verdict)> {
        o.assertions
            .iter()
            .map(|a| (a.property, a.verdict))
            .collect()
    }

    use crate::outcome::Verdict::{Error, Fail, Pass};

    const W: Duration = Duration::from_secs(2);

    #[test]
    fn a_paced_walk_to_the_null_cursor_passes() {
        let o = judge(
            &runs(&[
                (0.0, "", 200, Some(0)),
                (0.5, "c1", 200, Some(1)),
                (1.2, "c2", 200, Some(2)),
                (1.7, "c3", 200, Some(3)),
                (2.7, "c4", 200, Some(4)),
                (3.2, "c5", 200, Some(5)),
            ]),
            "cursor",
            6,
            4,
            W,
        );
        assert_eq!(
            verdicts(&o),
            [
                ("follows_cursor", Pass),
                ("stops_at_end", Pass),
                ("paces_to_remaining", Pass)
            ],
            "{o:?}"
        );
    }

    #[test]
    fn a_request_after_the_end_fails_only_stops_at_end() {
        let o = judge(
            &runs(&[
                (0.0, "", 200, Some(0)),
                (0.5, "c1", 200, Some(1)),
                (2.1, "", 200, None),
            ]),
            "cursor",
            2,
            1,
            W,
        );
        assert_eq!(
            verdicts(&o),
            [
                ("follows_cursor", Pass),
                ("stops_at_end", Fail),
                ("paces_to_remaining", Fail)
            ],
            "{o:?}"
        );
        let o = judge(
            &runs(&[
                (0.0, "", 200, Some(0)),
                (0.5, "c1", 200, Some(1)),
                (1.0, "", 200, None),
            ]),
            "cursor",
            2,
            4,
            W,
        );
        assert_eq!(o.assertions[1].verdict, Fail, "{o:?}");
        assert_eq!(o.assertions[2].verdict, Error, "too few to judge pacing");
    }

    #[test]
    fn a_429_delivers_nothing_and_the_same_cursor_is_due_again() {
        let o = judge(
            &runs(&[
                (0.0, "", 200, Some(0)),
                (0.01, "c1", 200, Some(1)),
                (0.02, "c2", 429, Some(2)),
                (1.5, "c2", 200, Some(3)),
                (1.6, "c4", 200, None),
            ]),
            "cursor",
            5,
            2,
            W,
        );
        assert_eq!(
            verdicts(&o),
            [
                ("follows_cursor", Pass),
                ("stops_at_end", Pass),
                ("paces_to_remaining", Fail)
            ],
            "{o:?}"
        );
    }

    #[test]
    fn a_cursor_not_followed_or_a_walk_cut_short_fails_follows_cursor() {
        let skipped = judge(
            &runs(&[
                (0.0, "", 200, Some(0)),
                (0.5, "c2", 200, Some(1)),
                (1.0, "c2", 200, Some(2)),
            ]),
            "cursor",
            3,
            4,
            W,
        );
        assert_eq!(skipped.assertions[0].verdict, Fail, "{skipped:?}");
        assert!(
            skipped.assertions[0]
                .message
                .contains("request #2 asked cursor=c2 where the page before handed out c1"),
            "{skipped:?}"
        );
        let short = judge(
            &runs(&[(0.0, "", 200, Some(0)), (0.5, "c1", 200, Some(1))]),
            "cursor",
            3,
            4,
            W,
        );
        assert_eq!(
            verdicts(&short)[..2],
            [("follows_cursor", Fail), ("stops_at_end", Error)],
            "{short:?}"
        );
    }
}
