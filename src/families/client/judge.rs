//! The judges of the client kinds: pure functions from recorded attempt
//! timelines to an outcome, so they can be unit-tested without processes.

use std::collections::HashMap;
use std::time::Duration;

use super::exec::{stderr_note, RunRecord};
use crate::families::client::plan::{KeyFormat, Policy503};
use crate::families::Outcome;
use crate::outcome::{prop, PropValue};
use crate::upstream::{Attempt, RetryAfterForm};

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn short_key(k: &Option<String>) -> String {
    match k {
        Some(k) if k.chars().count() > 10 => {
            format!("key={}…", k.chars().take(8).collect::<String>())
        }
        Some(k) => format!("key={k}"),
        None => "no key".into(),
    }
}

/// `#1 +0.000s POST → 429 Retry-After 1s key=1b2c3d4e…; #2 +1.061s ...`
pub fn timeline(a: &[&Attempt]) -> String {
    let Some(first) = a.first() else {
        return "no attempts".into();
    };
    let parts: Vec<String> = a
        .iter()
        .enumerate()
        .take(40)
        .map(|(i, x)| {
            format!(
                "#{} +{:.3}s {} {} -> {} {} body={}",
                i + 1,
                secs(x.at.saturating_sub(first.at)),
                x.method,
                x.path,
                x.answer.short(),
                short_key(&x.idempotency_key),
                &x.body_sha256[..8.min(x.body_sha256.len())]
            )
        })
        .collect();
    let more = if a.len() > 40 {
        format!("; … {} more", a.len() - 40)
    } else {
        String::new()
    };
    format!("timeline: {}{more}", parts.join("; "))
}

/// The gap from an answer to the next attempt.
fn gap(prev: &Attempt, next: &Attempt) -> f64 {
    secs(next.at) - secs(prev.answered_at)
}

pub fn retry_after(runs: &[RunRecord], tolerance: Duration) -> Outcome {
    let mut judged = Vec::new();
    let mut early = Vec::new();
    for r in runs {
        for res in &r.results {
            let a = r.of(res.client);
            for w in a.windows(2) {
                let Some(ra) = w[0].answer.retry_after() else {
                    continue;
                };
                let date = matches!(
                    &w[0].answer,
                    crate::upstream::Answer::Status {
                        form: Some(RetryAfterForm::HttpDate),
                        ..
                    }
                );
                // An HTTP-date has whole-second precision: allow one second (RETRY-001).
                let required = ra - if date { 1.0 } else { 0.0 } - secs(tolerance);
                let g = gap(w[0], w[1]);
                judged.push(g);
                if g < required {
                    early.push((g, ra, required, date, a.clone(), res.clone()));
                }
            }
            if judged.is_empty() {
                return Outcome::error(format!(
                    "the client never retried after an answer with Retry-After, so the wait could not be judged (it {}); {}{}",
                    res.describe(),
                    timeline(&a),
                    stderr_note(res)
                ));
            }
        }
    }
    if let Some((g, ra, required, date, a, _)) = early.first() {
        return Outcome::fail(
            format!(
                "the client retried {g:.3} s after a Retry-After of {ra:.0} s{}; {}",
                if *date { " (HTTP-date)" } else { "" },
                timeline(a)
            ),
            format!("next attempt at least {required:.3} s after the answer"),
            format!("{g:.3} s"),
        );
    }
    let min = judged.iter().cloned().fold(f64::INFINITY, f64::min);
    Outcome::pass(format!(
        "the client waited {min:.3} s or more after Retry-After"
    ))
    .with_properties(vec![prop("min_gap_s", PropValue::rounded(min, 3))])
}

pub fn exponential(runs: &[RunRecord], growth: f64, max_gap: Duration, min_gaps: usize) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let a = r.of(res.client);
    let gaps: Vec<f64> = a
        .windows(2)
        .filter(|w| !w[0].answer.is_success() && w[0].answer.retry_after().is_none())
        .map(|w| gap(w[0], w[1]))
        .collect();
    if gaps.len() < min_gaps {
        return Outcome::error(format!(
            "the client made {} retries after answers without Retry-After; at least {min_gaps} are needed to judge its backoff (it {}); {}{}",
            gaps.len(),
            res.describe(),
            timeline(&a),
            stderr_note(res)
        ));
    }
    let shown: Vec<String> = gaps.iter().map(|g| format!("{:.3}", g)).collect();
    let shown = shown.join(", ");
    if let Some(g) = gaps.iter().find(|g| **g > secs(max_gap)) {
        return Outcome::fail(
            format!(
                "a gap of {g:.3} s is above the cap; gaps: [{shown}] s; {}",
                timeline(&a)
            ),
            format!("every gap at most {:.0} s", secs(max_gap)),
            format!("{g:.3} s"),
        );
    }
    let half = gaps.len() / 2;
    let early: f64 = gaps[..half].iter().sum();
    let late: f64 = gaps[half..].iter().sum();
    let ratio = if early > 0.0 {
        late / early
    } else {
        f64::INFINITY
    };
    let props = vec![
        prop("gaps_s", shown.clone()),
        prop("growth", PropValue::rounded(ratio, 2)),
    ];
    if ratio < growth {
        return Outcome::fail(
            format!(
                "the gaps between attempts do not grow: later half sums to {late:.3} s, earlier half {early:.3} s; gaps: [{shown}] s; {}",
                timeline(&a)
            ),
            format!("later half of the gaps >= {growth} x the earlier half"),
            format!("{ratio:.2} x"),
        )
        .with_properties(props);
    }
    Outcome::pass(format!(
        "gaps grow {ratio:.1} x from the earlier to the later half: [{shown}] s"
    ))
    .with_properties(props)
}

pub fn jitter(
    runs: &[RunRecord],
    min_stdev: Duration,
    bucket: Duration,
    max_share: f64,
) -> Outcome {
    let r = &runs[0];
    let mut offsets = Vec::new();
    for res in &r.results {
        let a = r.of(res.client);
        if let Some(i) = a.iter().position(|x| x.answer.retry_after().is_some()) {
            if let (Some(prev), Some(next)) = (a.get(i), a.get(i + 1)) {
                let ra = prev.answer.retry_after().unwrap_or(0.0);
                offsets.push(secs(next.at) - (secs(prev.answered_at) + ra));
            }
        }
    }
    let k = r.results.len();
    if offsets.len() < (k / 2).max(2) {
        let sample = r
            .results
            .iter()
            .find(|x| r.of(x.client).len() < 2)
            .unwrap_or(&r.results[0]);
        return Outcome::error(format!(
            "only {} of {k} clients retried after Retry-After; the spread cannot be judged (client {} {}; {}){}",
            offsets.len(),
            sample.client,
            sample.describe(),
            timeline(&r.of(sample.client)),
            stderr_note(sample)
        ));
    }
    let n = offsets.len() as f64;
    let mean = offsets.iter().sum::<f64>() / n;
    let stdev = (offsets.iter().map(|o| (o - mean).powi(2)).sum::<f64>() / n).sqrt();
    let mut buckets: HashMap<i64, usize> = HashMap::new();
    for o in &offsets {
        *buckets
            .entry((o / secs(bucket)).floor() as i64)
            .or_default() += 1;
    }
    let (top_b, top_n) = buckets
        .iter()
        .max_by_key(|(b, c)| (**c, -**b))
        .map(|(b, c)| (*b, *c))
        .unwrap_or((0, 0));
    let share = top_n as f64 / n;
    let mut sorted = offsets.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let min = sorted[0];
    let max = sorted[sorted.len() - 1];
    let props = vec![
        prop("offset_stdev_s", PropValue::rounded(stdev, 3)),
        prop("max_bucket_share", PropValue::rounded(share, 2)),
        prop("offset_min_s", PropValue::rounded(min, 3)),
        prop("offset_max_s", PropValue::rounded(max, 3)),
    ];
    let summary = format!(
        "{} retries, offsets from Retry-After {min:.3} s to {max:.3} s, stdev {stdev:.3} s, {top_n} ({:.0} %) in the {}–{} ms bucket",
        offsets.len(),
        share * 100.0,
        top_b * bucket.as_millis() as i64,
        (top_b + 1) * bucket.as_millis() as i64
    );
    if stdev < secs(min_stdev) || share > max_share {
        let list: Vec<String> = sorted
            .iter()
            .take(50)
            .map(|o| format!("{:.0}", o * 1000.0))
            .collect();
        return Outcome::fail(
            format!(
                "the clients retry together (thundering herd): {summary}; offsets (ms): [{}]",
                list.join(", ")
            ),
            format!(
                "stdev >= {:.3} s and at most {:.0} % of retries in one {} ms bucket",
                secs(min_stdev),
                max_share * 100.0,
                bucket.as_millis()
            ),
            format!("stdev {stdev:.3} s, {:.0} % in one bucket", share * 100.0),
        )
        .with_properties(props);
    }
    Outcome::pass(summary).with_properties(props)
}

pub fn bounded(runs: &[RunRecord], max_attempts: usize, max_total: Duration) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let a = r.of(res.client);
    let expected = format!(
        "at most {max_attempts} attempts and {}, then a non-zero exit",
        crate::fmt_duration(max_total)
    );
    let problem = match &res.ended {
        _ if a.len() > max_attempts => Some(format!("{} attempts", a.len())),
        super::process::Ended::Exited(Some(0)) => {
            Some("exit status 0 although no attempt succeeded (a silent give-up)".into())
        }
        super::process::Ended::Exited(Some(_)) if res.elapsed > max_total => {
            Some(format!("exited after {}", crate::fmt_duration(res.elapsed)))
        }
        super::process::Ended::Exited(Some(_)) => None,
        _ => Some(format!("the client {}", res.describe())),
    };
    match problem {
        Some(p) => Outcome::fail(
            format!(
                "the client does not stop retrying in bounds: it {}; {}{}",
                res.describe(),
                timeline(&a),
                stderr_note(res)
            ),
            expected,
            p,
        ),
        None => Outcome::pass(format!(
            "the client gave up after {} attempt(s) and {} with a non-zero exit",
            a.len(),
            crate::fmt_duration(res.elapsed)
        )),
    }
}

/// The first attempt answered with a status `pick` accepts, and how many
/// later attempts re-sent the same method and path (the retries of it).
/// Judged from the answers, not from the script, so a suite's `upstream:`
/// (other routes first, another path) is judged the same way.
fn retries_after<'a>(
    a: &[&'a Attempt],
    pick: impl Fn(u16) -> bool,
) -> Option<(&'a Attempt, usize)> {
    let i = a
        .iter()
        .position(|x| x.answer.status().is_some_and(&pick))?;
    let first = a[i];
    let again = a[i + 1..]
        .iter()
        .filter(|x| x.method == first.method && x.path == first.path)
        .count();
    Some((first, again))
}

pub fn no_retry_4xx(runs: &[RunRecord], statuses: &[u16]) -> Outcome {
    let mut bad = Vec::new();
    for r in runs {
        let a = r.of(r.results[0].client);
        let Some((_, again)) = retries_after(&a, |s| statuses.contains(&s)) else {
            let list: Vec<String> = statuses.iter().map(u16::to_string).collect();
            return Outcome::error(format!(
                "{}: no request was answered {}, so there was nothing to not retry ({})",
                r.label,
                list.join("/"),
                timeline(&a)
            ));
        };
        if again > 0 {
            bad.push(format!(
                "{}: {} requests ({})",
                r.label,
                a.len(),
                timeline(&a)
            ));
        }
    }
    let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
    if bad.is_empty() {
        Outcome::pass(format!("one request, no retry, for {}", labels.join(", ")))
    } else {
        Outcome::fail(
            format!(
                "the client retried a request the platform refused for good: {}",
                bad.join(" | ")
            ),
            "exactly 1 request per 4xx answer",
            format!("retried on {} of {} statuses", bad.len(), runs.len()),
        )
    }
}

pub fn retry_503(runs: &[RunRecord], policy: Policy503) -> Outcome {
    let mut problems = Vec::new();
    for r in runs {
        let a = r.of(r.results[0].client);
        let Some((first, again)) = retries_after(&a, |s| s == 503) else {
            return Outcome::error(format!(
                "{}: no request was answered 503, so the policy was not exercised ({})",
                r.label,
                timeline(&a)
            ));
        };
        let retried = again > 0;
        let with_ra = first.answer.retry_after().is_some();
        let should = match policy {
            Policy503::RetryAfterOnly => with_ra,
            Policy503::Always => true,
            Policy503::Never => false,
        };
        if retried != should {
            problems.push(format!(
                "{}: {} ({}; the client {})",
                r.label,
                if retried { "retried" } else { "did not retry" },
                timeline(&a),
                r.results[0].describe()
            ));
        }
    }
    let expected = match policy {
        Policy503::RetryAfterOnly => "retry a 503 only when it carries Retry-After",
        Policy503::Always => "retry every 503",
        Policy503::Never => "never retry a 503",
    };
    if problems.is_empty() {
        Outcome::pass(format!("the client follows the 503 policy: {expected}"))
    } else {
        Outcome::fail(
            format!("the client breaks the 503 policy: {}", problems.join(" | ")),
            expected,
            problems
                .iter()
                .map(|p| p.split(" (").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("; "),
        )
    }
}

pub fn key_ok(key: &str, f: KeyFormat) -> bool {
    let uuid = || {
        regex::Regex::new(
            r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        )
        .map(|r| r.is_match(key))
        .unwrap_or(false)
    };
    let ulid = || {
        regex::Regex::new(r"(?i)^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
            .map(|r| r.is_match(key))
            .unwrap_or(false)
    };
    match f {
        KeyFormat::UuidV4OrUlid => uuid() || ulid(),
        KeyFormat::UuidV4 => uuid(),
        KeyFormat::Ulid => ulid(),
        KeyFormat::Any => !key.trim().is_empty(),
    }
}

pub fn idempotency_keys(runs: &[RunRecord], format: KeyFormat, min_operations: usize) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let a: Vec<&Attempt> = r
        .of(res.client)
        .into_iter()
        .filter(|x| x.is_mutating())
        .collect();
    // A new logical operation starts after a success; anything else is retried.
    let mut ops: Vec<Vec<&Attempt>> = Vec::new();
    let mut open = false;
    for x in &a {
        if !open {
            ops.push(Vec::new());
        }
        ops.last_mut().expect("pushed").push(x);
        open = !x.answer.is_success();
    }
    let mut problems = Vec::new();
    let missing = a.iter().filter(|x| x.idempotency_key.is_none()).count();
    if missing > 0 {
        problems.push(format!(
            "{missing} of {} mutating requests have no Idempotency-Key",
            a.len()
        ));
    }
    if let Some(bad) = a
        .iter()
        .filter_map(|x| x.idempotency_key.as_ref())
        .find(|k| !key_ok(k, format))
    {
        // As the suite spells the format.
        let want = match format {
            KeyFormat::UuidV4OrUlid => "uuidv4-or-ulid",
            KeyFormat::UuidV4 => "uuidv4",
            KeyFormat::Ulid => "ulid",
            KeyFormat::Any => "any",
        };
        problems.push(format!("key `{bad}` is not {want}"));
    }
    for (i, op) in ops.iter().enumerate() {
        let first = op[0];
        for x in &op[1..] {
            if x.idempotency_key.is_some() && x.idempotency_key != first.idempotency_key {
                problems.push(format!(
                    "operation {}: a retry used a new key ({:?} then {:?}), a duplicate-charge risk",
                    i + 1,
                    first.idempotency_key.as_deref().unwrap_or(""),
                    x.idempotency_key.as_deref().unwrap_or("")
                ));
                break;
            }
            if x.body_sha256 != first.body_sha256 {
                problems.push(format!(
                    "operation {}: a retry sent a different body (sha256 {} then {})",
                    i + 1,
                    &first.body_sha256[..12],
                    &x.body_sha256[..12]
                ));
                break;
            }
        }
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        if let Some(k) = op[0].idempotency_key.as_deref() {
            if let Some(j) = seen.insert(k, i) {
                problems.push(format!(
                    "operations {} and {} share the key {k}",
                    j + 1,
                    i + 1
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Outcome::fail(
            format!("Idempotency-Key problems: {}; {}", problems.join("; "), timeline(&a)),
            "a UUIDv4/ULID key on every mutating request, the same key and body on every retry, a new key per operation",
            problems[0].clone(),
        );
    }
    let retried = ops.iter().filter(|o| o.len() > 1).count();
    if ops.len() < min_operations || retried == 0 {
        return Outcome::error(format!(
            "could not judge key reuse: {} operation(s), {retried} with a retry (need {min_operations} operations and a retry; the client {}); {}{}",
            ops.len(),
            res.describe(),
            timeline(&a),
            stderr_note(res)
        ));
    }
    Outcome::pass(format!(
        "{} operations, {} mutating requests: one well-formed key per operation, reused with a byte-identical body on every retry",
        ops.len(),
        a.len()
    ))
}

pub fn slows_before_limit(
    runs: &[RunRecord],
    limit: u32,
    window: Duration,
    min_requests: usize,
) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let a = r.of(res.client);
    if a.len() < min_requests {
        return Outcome::error(format!(
            "the client sent {} request(s); at least {min_requests} are needed to see it pace itself (give it more operations; it {}){}",
            a.len(),
            res.describe(),
            stderr_note(res)
        ));
    }
    let end = secs(a[0].at) + secs(window);
    let in_window = a.iter().filter(|x| secs(x.at) < end).count();
    let limited = a.iter().filter(|x| x.answer.status() == Some(429)).count();
    if in_window > limit as usize || limited > 0 {
        return Outcome::fail(
            format!(
                "the client spent past X-RateLimit-Remaining: {in_window} requests in the first {} window of {limit}, {limited} answered 429; {}",
                crate::fmt_duration(window),
                timeline(&a)
            ),
            format!("at most {limit} requests before the reset (Remaining: {} after the first)", limit - 1),
            format!("{in_window} requests, {limited} x 429"),
        );
    }
    Outcome::pass(format!(
        "{in_window} requests in the first {} window (limit {limit}), no 429 in {} requests",
        crate::fmt_duration(window),
        a.len()
    ))
}

/// `1 attempt: 38 keys, 5 attempts: 2 keys` from per-key attempt counts.
pub fn histogram(per_key: &[(String, usize)]) -> String {
    let mut h: std::collections::BTreeMap<usize, usize> = Default::default();
    for (_, n) in per_key {
        *h.entry(*n).or_default() += 1;
    }
    h.iter()
        .map(|(attempts, keys)| {
            format!(
                "{attempts} attempt{}: {keys} key{}",
                if *attempts == 1 { "" } else { "s" },
                if *keys == 1 { "" } else { "s" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn amplification(runs: &[RunRecord], operations: Option<usize>, max: f64) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let a = r.of(res.client);
    // Per key, in order of first use.
    let mut per_key: Vec<(String, usize)> = Vec::new();
    for x in &a {
        let k = x.idempotency_key.clone().unwrap_or_default();
        match per_key.iter_mut().find(|(key, _)| *key == k) {
            Some(e) => e.1 += 1,
            None => per_key.push((k, 1)),
        }
    }
    let keyless = a.iter().filter(|x| x.idempotency_key.is_none()).count();
    let ops = match operations {
        Some(n) => n,
        None if keyless > 0 => {
            return Outcome::error(format!(
                "cannot count logical operations: {keyless} of {} requests carry no Idempotency-Key; set `operations` to the number the client performs (it {}){}",
                a.len(),
                res.describe(),
                stderr_note(res)
            ))
        }
        None => per_key.len(),
    };
    let injected = a
        .iter()
        .filter(|x| x.injected == Some(crate::upstream::Injected::Fresh))
        .count();
    let held = a
        .iter()
        .filter(|x| x.injected == Some(crate::upstream::Injected::Held))
        .count();
    let amp = a.len() as f64 / ops as f64;
    let hist = histogram(&per_key);
    let props = vec![
        prop("requests", a.len()),
        prop("logical_operations", ops),
        prop("amplification", PropValue::rounded(amp, 3)),
        prop("injected_failures", injected),
        prop("attempts_per_key", hist.clone()),
    ];
    let counts = format!(
        "{} requests for {ops} logical operations{} ({injected} injected failures, {held} more requests inside a failure's hold); attempts per key: {hist}",
        a.len(),
        if operations.is_some() { "" } else { " (distinct Idempotency-Keys)" }
    );
    if amp > max {
        // The keys that cost most, with what each attempt got.
        let mut worst: Vec<&(String, usize)> = per_key.iter().filter(|(_, n)| *n > 1).collect();
        worst.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        let detail: Vec<String> = worst
            .iter()
            .take(3)
            .map(|(k, n)| {
                let seq: Vec<&&Attempt> = a
                    .iter()
                    .filter(|x| x.idempotency_key.as_deref().unwrap_or("") == k)
                    .collect();
                let first = seq.first().map(|x| x.at).unwrap_or_default();
                let steps: Vec<String> = seq
                    .iter()
                    .map(|x| {
                        format!(
                            "+{:.3}s {}",
                            secs(x.at.saturating_sub(first)),
                            x.answer.short()
                        )
                    })
                    .collect();
                format!(
                    "{} {n} attempts [{}]",
                    short_key(&Some(k.clone()).filter(|k| !k.is_empty())),
                    steps.join(", ")
                )
            })
            .collect();
        return Outcome::fail(
            format!(
                "retry amplification {amp:.2}: {counts}; worst keys: {}",
                detail.join(" | ")
            ),
            format!("at most {max} requests per logical operation"),
            format!("{amp:.2} ({} / {ops})", a.len()),
        )
        .with_properties(props);
    }
    if injected == 0 {
        return Outcome::error(format!(
            "no failure was injected in {} requests, so retries could not be judged; give the client more operations (it {}){}",
            a.len(),
            res.describe(),
            stderr_note(res)
        ));
    }
    if res.ended != super::process::Ended::Exited(Some(0)) {
        return Outcome::error(format!(
            "the client did not finish its operations (it {}), so {counts} is not a judgeable amplification; {}{}",
            res.describe(),
            timeline(&a),
            stderr_note(res)
        ))
        .with_properties(props);
    }
    Outcome::pass(format!("retry amplification {amp:.3}: {counts}")).with_properties(props)
}

pub fn replay(runs: &[RunRecord], header: &str, value: &str, operations: usize) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let a: Vec<&Attempt> = r
        .of(res.client)
        .into_iter()
        .filter(|x| x.is_mutating())
        .collect();
    let is_replay = |x: &Attempt| {
        x.answer.is_success() && x.answer_header(header).is_some_and(|v| v.trim() == value)
    };
    let Some(first_replay) = a.iter().position(|x| is_replay(x)) else {
        return Outcome::error(format!(
            "the client never received the replayed answer (it did not retry after the first failure; it {}); {}{}",
            res.describe(),
            timeline(&a),
            stderr_note(res)
        ));
    };
    let mut problems = Vec::new();
    for (i, x) in a.iter().enumerate().filter(|(_, x)| is_replay(x)) {
        let again = a[i + 1..]
            .iter()
            .filter(|y| y.idempotency_key == x.idempotency_key)
            .count();
        if again > 0 {
            problems.push(format!(
                "{again} more request(s) with {} after its replayed {}",
                short_key(&x.idempotency_key),
                x.answer.short()
            ));
        }
    }
    let mut keys: Vec<&Option<String>> = Vec::new();
    let mut new_after = 0;
    for (i, x) in a.iter().enumerate() {
        if !keys.contains(&&x.idempotency_key) {
            keys.push(&x.idempotency_key);
            if i > first_replay {
                new_after += 1;
            }
        }
    }
    // Keys first used after the replay: only the operations still to come may
    // bring one (a new key per retry before it is `client.idempotency_keys`'s
    // business).
    if new_after > operations.saturating_sub(1) {
        problems.push(format!(
            "{new_after} new Idempotency-Key(s) after the replay with {operations} operation(s) to perform: the operation was sent again under a new key, a duplicate side effect"
        ));
    }
    if res.ended != super::process::Ended::Exited(Some(0)) {
        problems.push(format!("the client {}", res.describe()));
    }
    if !problems.is_empty() {
        return Outcome::fail(
            format!(
                "the client did not take the replayed answer (`{header}: {value}`) as a success: {}; {}{}",
                problems.join("; "),
                timeline(&a),
                stderr_note(res)
            ),
            "exit 0, no further request for the replayed key, no new key for the same operation",
            problems[0].clone(),
        );
    }
    Outcome::pass(format!(
        "the replayed {} (`{header}: {value}`, attempt {}) ended the operation: {} request(s), {} key(s), exit 0",
        a[first_replay].answer.short(),
        first_replay + 1,
        a.len(),
        keys.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_groups_keys_by_attempts() {
        let per_key = vec![
            ("a".to_string(), 1),
            ("b".to_string(), 5),
            ("c".to_string(), 1),
        ];
        assert_eq!(histogram(&per_key), "1 attempt: 2 keys, 5 attempts: 1 key");
        assert_eq!(histogram(&[]), "");
    }

    #[test]
    fn key_formats() {
        let u = uuid::Uuid::new_v4().to_string();
        let l = ulid::Ulid::new().to_string();
        assert!(key_ok(&u, KeyFormat::UuidV4OrUlid));
        assert!(key_ok(&u.to_uppercase(), KeyFormat::UuidV4));
        assert!(key_ok(&l, KeyFormat::UuidV4OrUlid));
        assert!(!key_ok(&l, KeyFormat::UuidV4));
        assert!(!key_ok("order-42", KeyFormat::UuidV4OrUlid));
        assert!(key_ok("order-42", KeyFormat::Any));
        // A UUIDv1 is not a v4.
        assert!(!key_ok(
            "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
            KeyFormat::UuidV4
        ));
    }
}
