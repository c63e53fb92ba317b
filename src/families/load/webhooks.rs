//! LOAD-006: the webhook latency of a burst's own events. With `webhooks:`
//! in a `load:`, tminus runs a sink, subscribes it before the burst, and
//! while the burst runs keeps, for each success of the named request kind,
//! the object id its response names and when that request was sent and
//! answered. The sink notes when each event about that id first arrived.
//! After the burst it waits (bounded) for the rest and judges:
//!
//! - `lost`: events not delivered within `wait` after the burst (at most
//!   `max_lost`, default 0);
//! - each `pQ < LIMIT`: the event's true latency lies between *arrival −
//!   answer* (the event cannot exist before the request was sent, and may
//!   have been emitted as late as the answer) and *arrival − send*. A pass
//!   needs the upper bound's share under the limit above the percentile's
//!   chance band (`chance.rs`), a fail the lower bound's share below it;
//!   anything between is inconclusive, never a pass. A lost event counts as
//!   over every limit.
//!
//! Memory is bounded: at most [`MAX_TRACKED`] events are followed (the rest
//! are counted and named in the verdict) and the sink keeps one id and one
//! instant per event, not bodies.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::chance::percentile_band;
use crate::context::{CheckContext, PlanCtx, RequestPlan, Scope};
use crate::families::common::{describe, evidence, send};
use crate::model::jsonpath::JsonPath;
use crate::model::scalar::DurationValue;
use crate::outcome::{prop, Assertion, Evidence, Outcome, PropValue};
use crate::sink::{Sink, SinkEndpoint};
use crate::spec::request::RequestSpec;

/// The variable the subscribe requests name the sink's URL with (as the
/// webhook and polling families' sink checks do).
pub const SINK_URL_VAR: &str = "sink_url";
/// Events followed per burst; past it successes are counted, not followed.
pub const MAX_TRACKED: usize = 100_000;
/// A response body read for its id is at most this long.
const MAX_ID_BODY: usize = 64 << 10;
/// An id longer than this is not an id (and would cost memory per event).
const MAX_ID_LEN: usize = 256;
/// Default wait after the burst for deliveries still on their way.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// The longest wait a suite may ask for.
const MAX_WAIT: Duration = Duration::from_secs(600);
const TICK: Duration = Duration::from_millis(50);
/// Events a passing percentile needs beyond it.
const BEYOND: f64 = 5.0;

/// `load.webhooks` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhooksSpec {
    /// Requests sent before the burst that point the platform at
    /// `${var.sink_url}` (a subscription).
    pub subscribe: Vec<RequestSpec>,
    /// The mix entry whose successes each cause one event.
    pub request: Spanned<String>,
    /// Where that request's response names the object (`$.id`).
    pub id: Spanned<String>,
    /// Where a delivery's body names the same object (`$.data.id`).
    pub event_id: Spanned<String>,
    /// Time after the burst for deliveries still on their way; default 30s.
    #[serde(default)]
    pub wait: Option<Spanned<DurationValue>>,
    /// `p95 < 2s`, `p99 <= 5s`: event-to-sink latency percentiles.
    #[serde(default)]
    pub thresholds: Vec<Spanned<String>>,
    /// Events that may go undelivered; default 0.
    #[serde(default)]
    pub max_lost: u64,
}

/// One latency threshold: `pQ < limit` (or `<=`).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyThreshold {
    pub text: String,
    /// 0..1 (`p95` is 0.95).
    pub q: f64,
    pub limit: Duration,
    pub inclusive: bool,
}

/// `load.webhooks` planned.
#[derive(Debug, Clone)]
pub struct WebhooksPlan {
    pub subscribe: Vec<RequestPlan>,
    /// Index of the request kind in the mix.
    pub kind: usize,
    pub kind_name: String,
    pub id: JsonPath,
    pub event_id: JsonPath,
    pub wait: Duration,
    pub thresholds: Vec<LatencyThreshold>,
    pub max_lost: u64,
}

/// Parses `pQ < LIMIT` / `pQ <= LIMIT`.
pub fn parse_latency_threshold(text: &str) -> Result<LatencyThreshold, String> {
    let t = text.trim();
    let bad = |why: &str| format!("webhook latency threshold `{t}`: {why}");
    let (lhs, rhs, inclusive) = if let Some((l, r)) = t.split_once("<=") {
        (l, r, true)
    } else if let Some((l, r)) = t.split_once('<') {
        (l, r, false)
    } else {
        return Err(bad("expected `pQ < DURATION`, e.g. `p95 < 2s`"));
    };
    let q: f64 = lhs
        .trim()
        .strip_prefix('p')
        .and_then(|q| q.parse().ok())
        .filter(|q: &f64| *q > 0.0 && *q < 100.0)
        .ok_or_else(|| bad("the metric is a percentile `p50` to `p99.9`"))?;
    let limit = crate::model::scalar::parse_duration(rhs.trim())
        .map_err(|e| bad(&e))?
        .max(Duration::from_micros(1));
    Ok(LatencyThreshold {
        text: t.to_owned(),
        q: q / 100.0,
        limit,
        inclusive,
    })
}

impl PlanCtx<'_> {
    /// Plans `webhooks:` against the mix's kind names.
    pub fn webhooks_plan(
        &mut self,
        s: &WebhooksSpec,
        at: serde_saphyr::Location,
        mix: &[&str],
    ) -> Option<WebhooksPlan> {
        self.captures.insert(SINK_URL_VAR.to_owned());
        let subscribe: Vec<RequestPlan> = s.subscribe.iter().map(|r| self.request(r, at)).collect();
        if subscribe.is_empty() {
            self.error(
                at,
                "`webhooks.subscribe` needs at least one request that points the platform at `${var.sink_url}`",
            );
        }
        let kind = mix.iter().position(|m| *m == s.request.value);
        if kind.is_none() {
            self.error(
                s.request.referenced,
                format!(
                    "`webhooks.request` names `{}`, but the mix has: {}",
                    s.request.value,
                    mix.join(", ")
                ),
            );
        }
        let id = self.json_path(&s.id.value, s.id.referenced);
        let event_id = self.json_path(&s.event_id.value, s.event_id.referenced);
        let wait = s.wait.as_ref().map_or(DEFAULT_WAIT, |w| w.value.0);
        if let Some(w) = s.wait.as_ref().filter(|w| w.value.0 > MAX_WAIT) {
            self.error(
                w.referenced,
                format!(
                    "`webhooks.wait` is at most {}",
                    crate::fmt_duration(MAX_WAIT)
                ),
            );
        }
        let mut thresholds = Vec::new();
        for t in &s.thresholds {
            match parse_latency_threshold(&t.value) {
                Ok(th) => thresholds.push(th),
                Err(e) => self.error(t.referenced, e),
            }
        }
        Some(WebhooksPlan {
            subscribe,
            kind: kind?,
            kind_name: s.request.value.clone(),
            id,
            event_id,
            wait: wait.min(MAX_WAIT),
            thresholds,
            max_lost: s.max_lost,
        })
    }
}

/// The burst's side: each success of the kind, by the id its answer names.
pub struct Created {
    kind: usize,
    id: JsonPath,
    /// id -> (sent, answered) of its first success (a duplicate-key retry
    /// answers with the same object: one event).
    by_id: Mutex<HashMap<String, (Instant, Instant)>>,
    /// Successes past [`MAX_TRACKED`].
    untracked: AtomicU64,
    /// Successes whose body named no id at the path (or was too long).
    without_id: AtomicU64,
}

impl Created {
    pub fn new(plan: &WebhooksPlan) -> Self {
        Created {
            kind: plan.kind,
            id: plan.id.clone(),
            by_id: Mutex::new(HashMap::new()),
            untracked: AtomicU64::new(0),
            without_id: AtomicU64::new(0),
        }
    }

    /// Whether a response of `kind` must be read for its id.
    pub fn wants(&self, kind: usize, success: bool) -> bool {
        success && kind == self.kind
    }

    /// Records a success's id; `body` is `None` when it was too long to keep.
    pub fn record(&self, body: Option<&[u8]>, sent: Instant, done: Instant) {
        let body = body.filter(|b| b.len() <= MAX_ID_BODY);
        let Some(id) = body.and_then(|b| id_of(&self.id, b)) else {
            self.without_id.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let mut m = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= MAX_TRACKED && !m.contains_key(&id) {
            self.untracked.fetch_add(1, Ordering::Relaxed);
            return;
        }
        m.entry(id).or_insert((sent, done));
    }
}

/// The id at `path` in a JSON `body`, as text (a string or a number).
fn id_of(path: &JsonPath, body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let id = match path.select(&v)? {
        Value::String(s) => s,
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!id.is_empty() && id.len() <= MAX_ID_LEN).then_some(id)
}

/// The sink's side: when each event id first arrived.
#[derive(Default)]
struct Arrivals {
    first: HashMap<String, Instant>,
    /// Deliveries whose body named no id at `event_id`.
    unnamed: u64,
    deliveries: u64,
}

/// The sink and what it has seen, from the subscription to the judgement.
pub struct Session {
    sink: Sink,
    arrivals: Arc<Mutex<Arrivals>>,
    evidence: Vec<Evidence>,
}

/// Starts the sink and sends the subscribe requests; an error outcome when
/// the sink cannot listen or the platform refuses the subscription.
pub async fn begin(
    plan: &WebhooksPlan,
    ctx: &CheckContext,
    at: &SinkEndpoint,
) -> Result<Session, Outcome> {
    let arrivals = Arc::new(Mutex::new(Arrivals::default()));
    let seen = arrivals.clone();
    let path = plan.event_id.clone();
    let hook = Arc::new(move |when: Instant, body: &[u8]| {
        let id = id_of(&path, body);
        let mut a = seen.lock().unwrap_or_else(|p| p.into_inner());
        a.deliveries += 1;
        match id {
            Some(id) => {
                if a.first.len() < MAX_TRACKED || a.first.contains_key(&id) {
                    a.first.entry(id).or_insert(when);
                }
            }
            None => a.unnamed += 1,
        }
    });
    let sink = Sink::start_observed(vec![200], at, hook)
        .await
        .map_err(|e| {
            Outcome::error(format!(
                "the webhook sink cannot listen on {}: {e}",
                at.listen
            ))
        })?;
    let mut scope = Scope::new();
    scope.insert(SINK_URL_VAR.into(), sink.url().to_owned());
    let mut ev = Vec::new();
    for (i, req) in plan.subscribe.iter().enumerate() {
        let label = format!("subscribe {}", i + 1);
        let r = ctx.target.render(req, &scope);
        let ex = send(ctx, &r, &label).await?;
        let mut e = evidence(&label, &ex);
        if (200..300).contains(&ex.status()) {
            // A subscription's answer often holds its signing secret: the
            // status and request id are the evidence, not the body.
            e.detail = None;
        }
        ev.push(e);
        if !(200..300).contains(&ex.status()) {
            return Err(Outcome::error(format!(
                "{label} answered {}: the platform did not take the subscription, so the burst's webhooks cannot be measured",
                describe(&ex)
            ))
            .with_evidence(ev));
        }
    }
    Ok(Session {
        sink,
        arrivals,
        evidence: ev,
    })
}

/// Waits (at most `plan.wait`, cut by `cancel`) for every followed event,
/// then judges the latencies and the losses.
pub async fn finish(
    plan: &WebhooksPlan,
    session: Session,
    created: &Created,
    mut cancel: tokio::sync::watch::Receiver<bool>,
) -> Outcome {
    let followed: HashMap<String, (Instant, Instant)> = created
        .by_id
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let deadline = tokio::time::Instant::now() + plan.wait;
    let mut waited_out = false;
    loop {
        let all_in = {
            let a = session.arrivals.lock().unwrap_or_else(|p| p.into_inner());
            followed.keys().all(|id| a.first.contains_key(id))
        };
        if all_in {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            waited_out = true;
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = cancel.wait_for(|c| *c) => {
                session.sink.shutdown().await;
                return Outcome::skipped("the run was cancelled before the burst's webhooks arrived");
            }
        }
    }
    let (arrived, unnamed, deliveries) = {
        let a = session.arrivals.lock().unwrap_or_else(|p| p.into_inner());
        (a.first.clone(), a.unnamed, a.deliveries)
    };
    let url = session.sink.url().to_owned();
    let listen = session.sink.listen_addr();
    session.sink.shutdown().await;
    let mut latencies = Vec::with_capacity(followed.len());
    let mut lost = Vec::new();
    for (id, (sent, done)) in &followed {
        match arrived.get(id) {
            Some(at) => latencies.push(Bounds {
                low: at.saturating_duration_since(*done),
                high: at.saturating_duration_since(*sent),
            }),
            None => lost.push(id.as_str()),
        }
    }
    lost.sort_unstable();
    let counts = Counts {
        followed: followed.len() as u64,
        untracked: created.untracked.load(Ordering::Relaxed),
        without_id: created.without_id.load(Ordering::Relaxed),
        deliveries,
        unnamed,
        waited_out,
    };
    judge(plan, &counts, &latencies, &lost, &url, listen).with_evidence(session.evidence)
}

/// One delivered event's latency, between its two bounds.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub low: Duration,
    pub high: Duration,
}

/// What the burst and the sink counted.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Events followed (distinct ids of successes).
    pub followed: u64,
    pub untracked: u64,
    pub without_id: u64,
    /// Deliveries the sink accepted, retries included.
    pub deliveries: u64,
    /// Deliveries naming no id at `event_id`.
    pub unnamed: u64,
    /// The wait ran out with events missing.
    pub waited_out: bool,
}

/// The verdict on what arrived (pure: tested without a sink).
pub fn judge(
    plan: &WebhooksPlan,
    c: &Counts,
    latencies: &[Bounds],
    lost: &[&str],
    url: &str,
    listen: std::net::SocketAddr,
) -> Outcome {
    let mut props = vec![
        prop("events", c.followed),
        prop("delivered", latencies.len() as u64),
        prop("lost", lost.len() as u64),
        prop("deliveries", c.deliveries),
    ];
    if c.untracked > 0 {
        props.push(prop("untracked", c.untracked));
    }
    if c.followed == 0 {
        let why = if c.without_id > 0 {
            format!(
                "none of the {} successes of `{}` named an id at `{}`: check `webhooks.id` against its response",
                c.without_id, plan.kind_name, plan.id
            )
        } else {
            format!(
                "no request `{}` succeeded during the burst, so it caused no event to follow",
                plan.kind_name
            )
        };
        return Outcome::error(format!("LOAD-006 not exercised: {why}")).with_properties(props);
    }
    if latencies.is_empty() {
        let hint = if c.deliveries > 0 {
            format!(
                "{} deliveries arrived but none named one of the burst's ids at `{}` ({} named none): check `webhooks.event_id` against the delivery body",
                c.deliveries, plan.event_id, c.unnamed
            )
        } else {
            format!(
                "nothing reached the sink: tminus listened on {listen} and gave the platform `{url}` as `${{var.{SINK_URL_VAR}}}`; if it cannot reach that URL, use --sink-listen and --sink-url"
            )
        };
        return Outcome::error(format!(
            "none of the burst's {} events was delivered within {} after it: {hint}; a platform that loses every event cannot be told from one that cannot reach tminus",
            c.followed,
            crate::fmt_duration(plan.wait)
        ))
        .with_properties(props);
    }
    let mut assertions = Vec::new();
    let n = c.followed;
    let names: Vec<&str> = lost.iter().take(5).copied().collect();
    let more = if lost.len() > names.len() {
        format!(" and {} more", lost.len() - names.len())
    } else {
        String::new()
    };
    assertions.push(Assertion::check(
        "lost",
        lost.len() as u64 <= plan.max_lost,
        format!(
            "{} of {n} events delivered within {} of the burst's end ({} lost, at most {} allowed)",
            latencies.len(),
            crate::fmt_duration(plan.wait),
            lost.len(),
            plan.max_lost
        ),
        format!(
            "{} of the burst's {n} events never reached the sink within {} after the burst: {}{more}",
            lost.len(),
            crate::fmt_duration(plan.wait),
            names.join(", ")
        ),
        format!("at most {} lost", plan.max_lost),
        format!("{} lost", lost.len()),
    ));
    for t in &plan.thresholds {
        assertions.push(judge_latency(t, n, latencies, &mut props));
    }
    let mut o = fold(&assertions).with_properties(props);
    if c.untracked > 0 {
        o.message = format!(
            "{} (the first {MAX_TRACKED} events were followed, {} more were not)",
            o.message, c.untracked
        );
    }
    o
}

/// One outcome of the parts (a burst's result is one property, LOAD-006):
/// a failed part fails it, else an inconclusive one makes it inconclusive,
/// else an unexercised one an error; every part's message is kept.
fn fold(parts: &[Assertion]) -> Outcome {
    use crate::outcome::Verdict;
    let text = |a: &Assertion| format!("{}: {}", a.property, a.message);
    let mut ordered: Vec<&Assertion> = parts
        .iter()
        .filter(|a| a.verdict == Verdict::Fail)
        .collect();
    ordered.extend(parts.iter().filter(|a| a.verdict != Verdict::Fail));
    let message = ordered
        .iter()
        .map(|a| text(a))
        .collect::<Vec<_>>()
        .join("; ");
    if let Some(first) = parts.iter().find(|a| a.verdict == Verdict::Fail) {
        return Outcome::fail(
            message,
            first.expected.clone().unwrap_or_default(),
            first.actual.clone().unwrap_or_default(),
        );
    }
    if parts.iter().any(|a| a.inconclusive) {
        return Outcome::inconclusive(message);
    }
    if parts.iter().any(|a| a.verdict == Verdict::Error) {
        return Outcome::error(message);
    }
    Outcome::pass(message)
}

fn judge_latency(
    t: &LatencyThreshold,
    n: u64,
    latencies: &[Bounds],
    props: &mut Vec<(String, PropValue)>,
) -> Assertion {
    let under = |d: Duration| {
        if t.inclusive {
            d <= t.limit
        } else {
            d < t.limit
        }
    };
    // Lost events are in `n` and under no limit.
    let share_high = latencies.iter().filter(|b| under(b.high)).count() as f64 / n as f64;
    let share_low = latencies.iter().filter(|b| under(b.low)).count() as f64 / n as f64;
    let pq = |f: fn(&Bounds) -> Duration| {
        let mut v: Vec<Duration> = latencies.iter().map(f).collect();
        v.sort_unstable();
        let rank = ((t.q * n as f64).ceil() as usize).clamp(1, n as usize);
        v.get(rank - 1).copied()
    };
    let show = |d: Option<Duration>| match d {
        Some(d) => format!("{:.1} ms", d.as_secs_f64() * 1000.0),
        None => "beyond the wait (lost)".into(),
    };
    let (high, low) = (show(pq(|b| b.high)), show(pq(|b| b.low)));
    let slug = format!("p{}", (t.q * 1000.0).round() / 10.0).replace('.', "_");
    if let Some(d) = pq(|b| b.high) {
        props.push(prop(
            format!("{slug}_high_ms"),
            PropValue::rounded(d.as_secs_f64() * 1000.0, 3),
        ));
    }
    if let Some(d) = pq(|b| b.low) {
        props.push(prop(
            format!("{slug}_low_ms"),
            PropValue::rounded(d.as_secs_f64() * 1000.0, 3),
        ));
    }
    let Some((lo, hi)) = percentile_band(t.q, n) else {
        return Assertion::not_exercised("latency", format!("{}: no event", t.text));
    };
    let measured = if pq(|b| b.high).is_some() {
        format!("between {low} (from the answer) and {high} (from the send) over {n} events")
    } else {
        format!(
            "beyond the wait: its rank falls among the {} of {n} events never delivered",
            n as usize - latencies.len()
        )
    };
    // A pass needs a few events beyond the percentile (p95: 100 events, p99:
    // 500), or the whole sample could sit under a limit the tail breaks;
    // a fail on far too slow events needs no such count (the band decides).
    let needed = (BEYOND / (1.0 - t.q)).ceil() as u64;
    if share_high > hi && n < needed {
        Assertion::inconclusive(
            "latency",
            format!(
                "inconclusive: {} measured {measured}: a pass on p{} needs at least {needed} events ({BEYOND} beyond it); run a longer burst or give a lower percentile",
                t.text,
                t.q * 100.0
            ),
        )
    } else if share_high > hi {
        Assertion::pass("latency", format!("{}: event-to-sink {measured}", t.text))
    } else if share_low < lo {
        Assertion::fail(
            "latency",
            format!(
                "webhook latency breached: {} measured {measured} ({:.1}% of events arrived within the limit even counted from the answer)",
                t.text,
                share_low * 100.0
            ),
            t.text.clone(),
            low,
        )
    } else {
        Assertion::inconclusive(
            "latency",
            format!(
                "inconclusive: {} measured {measured}; {:.1}%–{:.1}% of events arrived within the limit (from the send and from the answer), and {n} events decide only outside {:.1}%–{:.1}%: the request's own latency or too few events leave it open",
                t.text,
                share_high * 100.0,
                share_low * 100.0,
                lo * 100.0,
                hi * 100.0
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(thresholds: &[&str], max_lost: u64) -> WebhooksPlan {
        WebhooksPlan {
            subscribe: Vec::new(),
            kind: 0,
            kind_name: "create".into(),
            id: JsonPath::parse("$.id").unwrap(),
            event_id: JsonPath::parse("$.data.id").unwrap(),
            wait: Duration::from_secs(5),
            thresholds: thresholds
                .iter()
                .map(|t| parse_latency_threshold(t).unwrap())
                .collect(),
            max_lost,
        }
    }

    fn ms(low: u64, high: u64) -> Bounds {
        Bounds {
            low: Duration::from_millis(low),
            high: Duration::from_millis(high),
        }
    }

    fn counts(n: u64) -> Counts {
        Counts {
            followed: n,
            deliveries: n,
            ..Counts::default()
        }
    }

    fn run(p: &WebhooksPlan, c: &Counts, l: &[Bounds], lost: &[&str]) -> Outcome {
        judge(
            p,
            c,
            l,
            lost,
            "http://127.0.0.1:1/sink/x",
            "127.0.0.1:1".parse().unwrap(),
        )
    }

    /// The verdict `property` left on the folded outcome (named in it).
    fn verdict_of(o: &Outcome, property: &str) -> (crate::outcome::Verdict, bool) {
        assert!(
            o.message.contains(&format!("{property}: ")),
            "{property}: {}",
            o.message
        );
        (o.verdict, o.inconclusive)
    }

    use crate::outcome::Verdict::{Error, Fail, Pass};

    #[test]
    fn thresholds_parse_and_refuse() {
        let t = parse_latency_threshold("p95 < 2s").unwrap();
        assert_eq!(
            (t.q, t.limit, t.inclusive),
            (0.95, Duration::from_secs(2), false)
        );
        let t = parse_latency_threshold("p99.9 <= 250ms").unwrap();
        assert!((t.q - 0.999).abs() < 1e-12 && t.inclusive);
        for bad in ["p95 > 2s", "mean < 1s", "p100 < 1s", "p95 < soon", "p95"] {
            assert!(parse_latency_threshold(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fast_deliveries_pass_on_the_upper_bound() {
        let l: Vec<Bounds> = (0..300).map(|i| ms(5 + i % 7, 20 + i % 9)).collect();
        let o = run(&plan(&["p95 < 1s"], 0), &counts(300), &l, &[]);
        assert_eq!(o.verdict, Pass, "{}", o.message);
        assert_eq!(verdict_of(&o, "latency"), (Pass, false));
    }

    #[test]
    fn slow_deliveries_fail_on_the_lower_bound() {
        let l: Vec<Bounds> = (0..300).map(|i| ms(3000 + i, 3100 + i)).collect();
        let o = run(&plan(&["p95 < 1s"], 0), &counts(300), &l, &[]);
        assert_eq!(verdict_of(&o, "latency"), (Fail, false));
        assert_eq!(o.verdict, Fail);
    }

    #[test]
    fn a_limit_between_the_bounds_is_inconclusive_never_a_pass() {
        // Every event arrived 0.9 s after its answer but 1.2 s after its
        // send: the request itself took 0.3 s, and the event may have been
        // emitted at any moment of it.
        let l: Vec<Bounds> = (0..300).map(|_| ms(900, 1200)).collect();
        let o = run(&plan(&["p95 < 1s"], 0), &counts(300), &l, &[]);
        assert_eq!(verdict_of(&o, "latency"), (Error, true), "{}", o.message);
        assert!(o.inconclusive);
    }

    #[test]
    fn too_few_events_for_the_percentile_are_inconclusive() {
        let l: Vec<Bounds> = (0..80).map(|_| ms(5, 10)).collect();
        let o = run(&plan(&["p99 < 1s"], 0), &counts(80), &l, &[]);
        assert_eq!(verdict_of(&o, "latency"), (Error, true), "{}", o.message);
        assert!(o.message.contains("500 events"), "{}", o.message);
        // Too few to pass, enough to fail: every one of 8 events was late.
        let l: Vec<Bounds> = (0..8).map(|_| ms(5000, 5010)).collect();
        let o = run(&plan(&["p99 < 1s"], 0), &counts(8), &l, &[]);
        assert_eq!(verdict_of(&o, "latency"), (Fail, false), "{}", o.message);
    }

    #[test]
    fn lost_events_fail_and_count_as_over_every_limit() {
        let l: Vec<Bounds> = (0..240).map(|_| ms(5, 10)).collect();
        let lost: Vec<String> = (0..60).map(|i| format!("msg_{i}")).collect();
        let lost: Vec<&str> = lost.iter().map(String::as_str).collect();
        let o = run(&plan(&["p95 < 1s"], 0), &counts(300), &l, &lost);
        assert_eq!(verdict_of(&o, "lost"), (Fail, false));
        // 240 of 300 within the limit is 80 %: far under p95, whatever the bound.
        assert_eq!(verdict_of(&o, "latency"), (Fail, false), "{}", o.message);
        assert!(o.message.contains("msg_0"), "{}", o.message);
        // Allowed losses: the loss passes, the percentile still counts them.
        let o = run(&plan(&[], 60), &counts(300), &l, &lost);
        assert_eq!(o.verdict, Pass, "{}", o.message);
    }

    #[test]
    fn nothing_delivered_or_nothing_followed_is_an_error_not_a_verdict() {
        let c = Counts {
            followed: 50,
            ..Counts::default()
        };
        let o = run(&plan(&["p95 < 1s"], 0), &c, &[], &["a"]);
        assert_eq!(o.verdict, Error);
        assert!(o.message.contains("--sink-listen"), "{}", o.message);
        let c = Counts {
            without_id: 40,
            ..Counts::default()
        };
        let o = run(&plan(&["p95 < 1s"], 0), &c, &[], &[]);
        assert_eq!(o.verdict, Error);
        assert!(o.message.contains("webhooks.id"), "{}", o.message);
    }

    #[test]
    fn ids_are_read_from_strings_and_numbers_only() {
        let p = JsonPath::parse("$.id").unwrap();
        assert_eq!(id_of(&p, br#"{"id":"msg_1"}"#).as_deref(), Some("msg_1"));
        assert_eq!(id_of(&p, br#"{"id":42}"#).as_deref(), Some("42"));
        assert_eq!(id_of(&p, br#"{"id":{"a":1}}"#), None);
        assert_eq!(id_of(&p, br#"{"id":""}"#), None);
        assert_eq!(id_of(&p, b"not json"), None);
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(MAX_ID_LEN + 1));
        assert_eq!(id_of(&p, long.as_bytes()), None);
    }

    #[test]
    fn a_duplicate_success_keeps_the_first_send() {
        let c = Created::new(&plan(&[], 0));
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(100);
        c.record(Some(br#"{"id":"m"}"#), t0, t0);
        c.record(Some(br#"{"id":"m"}"#), t1, t1);
        c.record(Some(b"{}"), t1, t1);
        c.record(None, t1, t1);
        let m = c.by_id.lock().unwrap();
        assert_eq!(m.get("m"), Some(&(t0, t0)));
        assert_eq!(c.without_id.load(Ordering::Relaxed), 2);
    }
}
