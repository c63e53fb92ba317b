//! The HTML report: one self-contained page a person can read and sign off
//! (partner certification). It opens with the launch checklist (a verdict and
//! counts per point), states what was certified (suites with version and
//! SHA-256, tminus version, target, start and end, skipped checks and why),
//! then every check with its evidence and request ids, failures first, and
//! ends with a sign-off block. Print-friendly; no scripts, no external
//! assets; every string is escaped and passed through the redactor.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::SystemTime;

use super::{prepare, Reporter};
use crate::events::{CheckResult, Event, SuiteInfo, Summary};
use crate::families::Verdict;
use crate::fmt_duration;
use crate::redact::Redactor;

/// A point of the launch checklist, in the order the report lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    Idempotency,
    RateLimits,
    Webhooks,
    Trace,
    Polling,
    Transport,
    Dependency,
    Contracts,
    Observability,
    Burst,
    Other,
}

impl Point {
    pub const ALL: [Point; 11] = [
        Point::Idempotency,
        Point::RateLimits,
        Point::Webhooks,
        Point::Trace,
        Point::Polling,
        Point::Transport,
        Point::Dependency,
        Point::Contracts,
        Point::Observability,
        Point::Burst,
        Point::Other,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Point::Idempotency => "1. Idempotency",
            Point::RateLimits => "2. Rate limits and backoff",
            Point::Webhooks => "3. Webhooks",
            Point::Trace => "4. Trace correlation",
            Point::Polling => "6. Polling fallback",
            Point::Transport => "Transport security",
            Point::Dependency => "A dependency that overheats",
            Point::Contracts => "Contracts in CI",
            Point::Observability => "No blind launch",
            Point::Burst => "Burst rehearsal",
            Point::Other => "Other checks",
        }
    }
}

pub use crate::model::text::html_text as escape;

/// The checklist point a check kind certifies: the catalogue point of the
/// requirements it covers (src/coverage.rs), so a new kind lands where its
/// ids say and never needs a second table here. A client's idempotency keys
/// are point 1, its retries point 2, its traceparent point 4.
pub fn checklist_point(kind: &str) -> Point {
    match crate::coverage::of_kind(kind).point {
        Some(1) => Point::Idempotency,
        Some(2) => Point::RateLimits,
        Some(3) => Point::Webhooks,
        Some(4) => Point::Trace,
        Some(5) => Point::Burst,
        Some(6) => Point::Polling,
        Some(7) => Point::Transport,
        Some(8) => Point::Dependency,
        Some(9) => Point::Contracts,
        Some(10) => Point::Observability,
        _ => Point::Other,
    }
}

/// Failures first, then what could not be judged, what did not run, and
/// what passed: the order a person reviewing a certification reads in.
fn detail_rank(v: Verdict) -> u8 {
    match v {
        Verdict::Fail => 0,
        Verdict::Error => 1,
        Verdict::Warn => 2,
        Verdict::Waived => 3,
        Verdict::Skipped => 4,
        Verdict::Pass => 5,
    }
}

/// Broken MUST and SHOULD properties of one outcome: its failed and warned
/// assertions, or the check itself when it judges one property.
fn property_counts(o: &crate::outcome::Outcome) -> (usize, usize) {
    if o.assertions.is_empty() {
        return (
            usize::from(o.verdict == Verdict::Fail),
            usize::from(o.verdict == Verdict::Warn),
        );
    }
    let count = |v: Verdict| o.assertions.iter().filter(|a| a.verdict == v).count();
    (count(Verdict::Fail), count(Verdict::Warn))
}

/// A point's verdict from its counts; `None` when no selected check covers it.
fn point_verdict(s: &Summary) -> Option<&'static str> {
    if s.total() == 0 {
        None
    } else if s.errored > 0 {
        Some("error")
    } else if s.failed > 0 {
        Some("fail")
    } else if s.warned > 0 {
        Some("warn")
    } else if s.waived > 0 {
        Some("waived")
    } else if s.passed > 0 {
        Some("pass")
    } else {
        Some("skipped")
    }
}

pub struct Html {
    path: PathBuf,
    redactor: Redactor,
    started_at: SystemTime,
    ended_at: Option<SystemTime>,
    /// The run's warnings, a banner under the title.
    warnings: Vec<String>,
    suites: Vec<(SuiteInfo, Vec<CheckResult>)>,
    summary: Summary,
    duration: std::time::Duration,
    cancelled: bool,
    finished: bool,
    /// Each burst's plot data (`Event::LoadFigures`), drawn by `plot.rs`.
    figures: Vec<crate::families::load::summary::BurstFigures>,
    /// Each contract suite's per-operation figures (`Event::ContractSummary`).
    contracts: Vec<crate::model::contract::ContractSummary>,
}

impl Html {
    pub fn new(path: PathBuf, redactor: Redactor) -> Self {
        Html {
            path,
            redactor,
            started_at: SystemTime::now(),
            ended_at: None,
            warnings: Vec::new(),
            suites: Vec::new(),
            summary: Summary::default(),
            duration: std::time::Duration::ZERO,
            cancelled: true,
            finished: false,
            figures: Vec::new(),
            contracts: Vec::new(),
        }
    }

    fn esc(&self, s: &str) -> String {
        escape(&self.redactor.redact(s))
    }

    fn render(&self) -> String {
        let s = self.summary;
        let verdict = if self.cancelled { "error" } else { s.verdict() };
        let ended_at = self.ended_at.unwrap_or_else(SystemTime::now);
        let mut h = String::new();
        let _ = write!(
            h,
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>tminus report: {verdict}</title><style>{CSS}</style></head><body>"
        );
        let _ = write!(
            h,
            "<h1>tminus certification report <span class=\"v {verdict}\">{}</span></h1><p class=\"meta\">{} · tminus {} · {} · {} passed, {} failed, {} warned, {} waived, {} errors, {} skipped{}</p>",
            verdict.to_uppercase(),
            humantime::format_rfc3339_seconds(self.started_at),
            env!("CARGO_PKG_VERSION"),
            fmt_duration(self.duration),
            s.passed,
            s.failed,
            s.warned,
            s.waived,
            s.errored,
            s.skipped,
            if self.cancelled { " · cancelled" } else { "" }
        );
        for w in &self.warnings {
            let _ = write!(
                h,
                "<p class=\"warning\" role=\"alert\"><strong>Warning:</strong> {}</p>",
                self.esc(w)
            );
        }
        self.render_checklist(&mut h);
        self.render_coverage(&mut h);
        self.render_waivers(&mut h);
        self.render_certified(&mut h, ended_at);
        self.render_skipped(&mut h);
        self.render_details(&mut h);
        h.push_str(&super::plot::section(&self.figures, &|s| self.esc(s)));
        h.push_str(&super::contract::section(&self.contracts, &|s| self.esc(s)));
        h.push_str(
            "<section class=\"signoff\"><h2>Sign-off</h2>\
             <p>I have reviewed the checklist and the evidence above.</p>\
             <div class=\"sig\"><span>Certified by</span><span class=\"line\"></span></div>\
             <div class=\"sig\"><span>Date</span><span class=\"line\"></span></div>\
             <div class=\"sig\"><span>Signature</span><span class=\"line\"></span></div></section>",
        );
        h.push_str("<p class=\"meta\">Secrets and sensitive headers are shown as [REDACTED].</p></body></html>\n");
        h
    }

    fn checks(&self) -> impl Iterator<Item = (&SuiteInfo, &CheckResult)> {
        self.suites
            .iter()
            .flat_map(|(info, checks)| checks.iter().map(move |c| (info, c)))
    }

    fn render_checklist(&self, h: &mut String) {
        h.push_str("<section class=\"checklist\"><h2>Checklist</h2><table><tr><th>point</th><th>verdict</th><th>checks</th><th>passed</th><th>MUST failures</th><th>SHOULD warnings</th><th>errors</th><th>skipped</th></tr>");
        for p in Point::ALL {
            let mut counts = Summary::default();
            // Properties, not checks, are what broke: a check with a failed
            // MUST and a broken SHOULD counts once in each column.
            let (mut must_failed, mut should_warned) = (0, 0);
            for (_, c) in self.checks().filter(|(_, c)| checklist_point(c.kind) == p) {
                counts.add_outcome(&c.outcome);
                let (f, w) = property_counts(&c.outcome);
                must_failed += f;
                should_warned += w;
            }
            // Plain checks are listed only when the suite has some; the four
            // points and the burst are always listed, covered or not.
            if p == Point::Other && counts.total() == 0 {
                continue;
            }
            let (class, label) = match point_verdict(&counts) {
                Some(v) => (v, v.to_uppercase()),
                None => ("none", "NOT COVERED".to_owned()),
            };
            let _ = write!(
                h,
                "<tr><td><b>{}</b></td><td><span class=\"v {class}\">{label}</span></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                p.title(),
                counts.total(),
                counts.passed,
                must_failed,
                should_warned,
                counts.errored,
                counts.skipped
            );
        }
        h.push_str("</table><p class=\"meta\">Each property has a severity (RFC 2119 MUST or SHOULD, listed in the check reference and overridable per check). A broken MUST fails its check and its point; a broken SHOULD is a warning (a failure under <code>--strict</code>); an error means a property could not be judged.</p></section>");
    }

    /// Requirement coverage per catalogue point: what the partner's run
    /// certified, and what it did not cover (no check of it ran).
    fn render_coverage(&self, h: &mut String) {
        let rows = crate::coverage::table(
            self.checks()
                .map(|(_, c)| (&c.requirements, c.outcome.verdict)),
        );
        h.push_str("<section class=\"coverage\"><h2>Requirement coverage</h2><table><tr><th>catalogue point</th><th>required</th><th>covered</th><th>passed</th><th>not covered</th></tr>");
        for r in &rows {
            // Each id carries its definition (docs/requirements.md) on hover:
            // the report is read where the docs are not.
            let missing: Vec<String> = r
                .required
                .iter()
                .copied()
                .filter(|i| !r.covered.contains(i))
                .map(|id| match crate::catalogue::requirement(id) {
                    Some(q) => format!(
                        "<abbr title=\"{}\">{id}</abbr>",
                        escape(&format!("{}: {}", q.what, q.pass))
                    ),
                    None => escape(id),
                })
                .collect();
            let _ = write!(
                h,
                "<tr><td><b>{}. {}</b></td><td>{}</td><td>{}</td><td>{}</td><td><small>{}</small></td></tr>",
                r.point,
                r.title,
                r.required.len(),
                r.covered.len(),
                r.passed.len(),
                missing.join(", ")
            );
        }
        h.push_str("</table><p class=\"meta\">Requirements are the ids of the checks catalogue (IDEM-002, RL-002, WH-006, ...), each defined in docs/requirements.md (<code>tminus checks --format requirements</code>; hover an id for its text). Covered: a check of it ran; passed: every check of it passed (a warning, a waiver or a failure is not a pass).</p></section>");
    }

    /// Every waiver and what it did in this run.
    fn render_waivers(&self, h: &mut String) {
        let rows: Vec<String> = self
            .checks()
            .flat_map(|(info, c)| {
                c.outcome.waivers.iter().map(move |w| {
                    format!(
                        "<tr><td><code>{}/{}.{}</code></td><td><span class=\"v {}\">{}</span></td><td>{}</td><td>{}</td></tr>",
                        self.esc(&info.name),
                        self.esc(&c.id),
                        w.property,
                        if w.state == crate::waiver::WaiverState::Expired { "fail" } else { "waived" },
                        w.state.as_str(),
                        w.until,
                        self.esc(&w.reason)
                    )
                })
            })
            .collect();
        if rows.is_empty() {
            return;
        }
        h.push_str("<section class=\"waivers\"><h2>Waivers</h2><table><tr><th>property</th><th>state</th><th>until</th><th>reason</th></tr>");
        for r in rows {
            h.push_str(&r);
        }
        h.push_str("</table><p class=\"meta\">Applied: the property was broken and is reported waived, neither passed nor failed. Unused: it held. Expired: past its date the property fails.</p></section>");
    }

    fn render_certified(&self, h: &mut String, ended_at: SystemTime) {
        let _ = write!(
            h,
            "<section class=\"certified\"><h2>What was certified</h2><dl><dt>tminus version</dt><dd>{}</dd><dt>started</dt><dd>{}</dd><dt>ended</dt><dd>{}{}</dd><dt>duration</dt><dd>{}</dd></dl>",
            env!("CARGO_PKG_VERSION"),
            humantime::format_rfc3339_seconds(self.started_at),
            humantime::format_rfc3339_seconds(ended_at),
            if self.cancelled { " (cancelled)" } else { "" },
            fmt_duration(self.duration)
        );
        h.push_str("<table><tr><th>suite</th><th>version</th><th>file</th><th>SHA-256</th><th>target</th><th>profile</th><th>checks</th></tr>");
        for (info, checks) in &self.suites {
            let _ = write!(
                h,
                "<tr><td><b>{}</b></td><td>{}</td><td><code>{}</code></td><td><code class=\"digest\">{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                self.esc(&info.name),
                info.version.as_deref().map_or_else(|| "(none)".to_owned(), |v| self.esc(v)),
                self.esc(&info.file.display().to_string()),
                info.digest.as_deref().map_or_else(|| "(unknown)".to_owned(), |d| self.esc(d)),
                self.esc(&info.target),
                info.profile,
                checks.len()
            );
        }
        h.push_str("</table></section>");
    }

    fn render_skipped(&self, h: &mut String) {
        h.push_str("<section class=\"skipped-list\"><h2>Skipped checks</h2>");
        let skipped: Vec<_> = self
            .checks()
            .filter(|(_, c)| c.outcome.verdict == Verdict::Skipped)
            .collect();
        if skipped.is_empty() {
            h.push_str("<p>None: every selected check ran.</p>");
        } else {
            h.push_str("<ul>");
            for (info, c) in skipped {
                let _ = write!(
                    h,
                    "<li><b>{}</b> / {} <small>({})</small>: {}</li>",
                    self.esc(&info.name),
                    self.esc(&c.id),
                    self.esc(c.kind),
                    self.esc(&c.outcome.message)
                );
            }
            h.push_str("</ul>");
        }
        h.push_str("</section>");
    }

    fn render_details(&self, h: &mut String) {
        h.push_str("<section class=\"details\"><h2>Details</h2><p class=\"meta\">Failures first, then errors, skipped and passed checks.</p>");
        let mut all: Vec<_> = self.checks().collect();
        // A stable sort keeps the run's order within each verdict.
        all.sort_by_key(|(_, c)| detail_rank(c.outcome.verdict));
        for (info, c) in all {
            self.render_check(h, info, c);
        }
        h.push_str("</section>");
    }

    fn render_check(&self, h: &mut String, info: &SuiteInfo, c: &CheckResult) {
        let o = &c.outcome;
        let v = o.verdict.as_str();
        let _ = write!(
            h,
            "<div class=\"check {v}\"><h3><span class=\"v {v}\">{v}</span> {}</h3><p class=\"meta\">{} · {} · {}{} · {}{}</p><p>{}</p>",
            self.esc(&c.id),
            self.esc(&info.name),
            self.esc(c.kind),
            checklist_point(c.kind).title(),
            if c.requirements.ids.is_empty() {
                String::new()
            } else {
                format!(" ({})", c.requirements.ids.join(", "))
            },
            fmt_duration(c.duration),
            c.description
                .as_ref()
                .map(|d| format!(" · {}", self.esc(d)))
                .unwrap_or_default(),
            self.esc(&o.message)
        );
        if o.expected.is_some() || o.actual.is_some() {
            let _ = write!(
                h,
                "<dl><dt>expected</dt><dd><code>{}</code></dd><dt>actual</dt><dd><code>{}</code></dd></dl>",
                self.esc(o.expected.as_deref().unwrap_or("")),
                self.esc(o.actual.as_deref().unwrap_or(""))
            );
        }
        if !o.assertions.is_empty() {
            h.push_str("<table class=\"props\"><tr><th>property</th><th>severity</th><th>verdict</th><th>observed</th></tr>");
            for a in &o.assertions {
                let v = a.verdict.as_str();
                let _ = write!(
                    h,
                    "<tr><td><code>{}.{}</code></td><td>{}</td><td><span class=\"v {v}\">{v}</span></td><td>{}{}</td></tr>",
                    self.esc(&c.id),
                    a.property,
                    a.severity,
                    self.esc(&a.message),
                    match (&a.expected, &a.actual) {
                        (Some(e), Some(x)) if a.verdict != Verdict::Pass => format!(
                            "<br><small>expected <code>{}</code>, actual <code>{}</code></small>",
                            self.esc(e),
                            self.esc(x)
                        ),
                        _ => String::new(),
                    }
                );
            }
            h.push_str("</table>");
        }
        if !o.evidence.is_empty() && o.verdict != Verdict::Pass {
            // Open, so a printed report carries the evidence too.
            h.push_str("<details open><summary>evidence</summary><ul>");
            for e in &o.evidence {
                let _ = write!(
                    h,
                    "<li>{}: <code>{}</code>{}{}{}</li>",
                    self.esc(&e.label),
                    self.esc(&e.request),
                    e.status
                        .map(|s| format!(" → <b>{s}</b>"))
                        .unwrap_or_default(),
                    e.request_id
                        .as_ref()
                        .map(|i| format!(" <small>({})</small>", self.esc(i)))
                        .unwrap_or_default(),
                    e.detail
                        .as_ref()
                        .map(|d| format!("<pre>{}</pre>", self.esc(d)))
                        .unwrap_or_default()
                );
            }
            h.push_str("</ul></details>");
        }
        if !o.properties.is_empty() {
            let props: Vec<String> = o
                .properties
                .iter()
                .map(|(k, v)| format!("{}={}", self.esc(k), self.esc(&v.text())))
                .collect();
            let _ = write!(h, "<p class=\"props\">{}</p>", props.join(" · "));
        }
        h.push_str("</div>");
    }
}

pub const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}\
.warning{background:#fdecea;border:2px solid #c62828;padding:.6em 1em;color:#8e0000}\
table{border-collapse:collapse;width:100%;margin-bottom:1.5em}td,th{border-bottom:1px solid #ddd;padding:.4em;vertical-align:top;text-align:left}\
.v{padding:.1em .5em;border-radius:3px;color:#fff;font-weight:600;font-size:.85em}.pass{background:#1a7f37}.fail{background:#cf222e}\
.error{background:#8250df}.skipped{background:#9a6700}.warn{background:#bf8700}.waived{background:#0969da}.none{background:#6e7781}\
.meta,.props,small{color:#666}pre{white-space:pre-wrap;background:#f6f8fa;padding:.5em;max-height:12em;overflow:auto}\
dl{display:grid;grid-template-columns:auto 1fr;gap:.2em 1em;margin:.4em 0}dt{color:#666}dd{margin:0}code{background:#f6f8fa;padding:0 .2em}\
code.digest{word-break:break-all;font-size:.85em}\
.check{border-left:4px solid #ddd;padding:.2em .8em;margin:0 0 1em}.check.pass,.check.fail,.check.error,.check.skipped{background:none}.check.fail{border-color:#cf222e}.check.error{border-color:#8250df}\
.check.skipped{border-color:#9a6700}.check.warn{border-color:#bf8700;background:none}.check.pass{border-color:#1a7f37}.check h3{margin:.3em 0;font-size:1.05em}.check p{margin:.3em 0}\
.signoff{margin-top:2em;border:1px solid #999;padding:1em 1.5em}.sig{display:flex;align-items:flex-end;gap:1em;margin:1.6em 0 .4em}\
figure.plot{margin:0 0 1.2em}figure.plot figcaption{color:#666;font-size:.9em}\
.sig span:first-child{min-width:8em}.sig .line{flex:1;border-bottom:1px solid #222;height:1.2em}\
@media print{body{margin:0;max-width:none;font-size:10pt}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}\
.check,.signoff,.checklist,.certified,tr,figure{break-inside:avoid;page-break-inside:avoid}h2,h3{break-after:avoid;page-break-after:avoid}\
pre{max-height:none;overflow:visible}details>summary{list-style:none}}";

impl Reporter for Html {
    fn event(&mut self, e: &Event) {
        match e {
            Event::RunStarted {
                started_at,
                warnings,
                ..
            } => {
                self.started_at = *started_at;
                self.warnings = warnings.clone();
            }
            Event::SuiteStarted(info) => self.suites.push((info.clone(), Vec::new())),
            Event::CheckFinished(r) => {
                self.summary.add_outcome(&r.outcome);
                if let Some((_, checks)) = self.suites.last_mut() {
                    checks.push((**r).clone());
                }
            }
            Event::LoadFigures(f) => self.figures.push((**f).clone()),
            Event::ContractSummary(c) => self.contracts.push((**c).clone()),
            Event::RunFinished {
                duration,
                cancelled,
                ..
            } => {
                self.duration = *duration;
                self.cancelled = *cancelled;
                self.ended_at = Some(self.started_at + *duration);
            }
            _ => {}
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        prepare(&self.path)?;
        super::write_atomic(&self.path, self.render().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::kind_names;
    use crate::outcome::{prop, Evidence, Outcome};
    use std::time::Duration;

    #[test]
    fn kinds_map_to_checklist_points_by_family() {
        assert_eq!(checklist_point("idempotency.replay"), Point::Idempotency);
        assert_eq!(
            checklist_point("client.idempotency_keys"),
            Point::Idempotency
        );
        assert_eq!(
            checklist_point("client.replay_is_success"),
            Point::Idempotency
        );
        assert_eq!(checklist_point("rate_limit.storm"), Point::RateLimits);
        assert_eq!(checklist_point("client.jitter"), Point::RateLimits);
        assert_eq!(
            checklist_point("client.respects_retry_after"),
            Point::RateLimits
        );
        assert_eq!(checklist_point("webhook.sink_retries"), Point::Webhooks);
        assert_eq!(checklist_point("trace.present"), Point::Trace);
        assert_eq!(checklist_point("load.threshold"), Point::Burst);
        assert_eq!(checklist_point("transport.hsts"), Point::Transport);
        assert_eq!(checklist_point("client.traceparent"), Point::Trace);
        assert_eq!(checklist_point("polling.cursor_walk"), Point::Polling);
        assert_eq!(checklist_point("dependency.breaker"), Point::Dependency);
        assert_eq!(checklist_point("contract.deprecation"), Point::Contracts);
        assert_eq!(
            checklist_point("observability.logs_clean"),
            Point::Observability
        );
        assert_eq!(checklist_point("steps"), Point::Other);
        // Every shipped kind but plain steps lands on one of the points, so a
        // new family cannot silently fall into "other checks".
        for k in kind_names() {
            assert_eq!(checklist_point(k) == Point::Other, k == "steps", "{k}");
        }
    }

    fn result(id: &str, kind: &'static str, outcome: Outcome) -> Event {
        Event::CheckFinished(Box::new(CheckResult {
            suite: "partner".into(),
            id: id.into(),
            kind,
            tags: Vec::new(),
            description: None,
            requirements: Default::default(),
            outcome,
            started_at: SystemTime::now(),
            duration: Duration::from_millis(12),
        }))
    }

    #[test]
    fn report_opens_with_checklist_and_ends_with_sign_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        let redactor = Redactor::new();
        redactor.add("s3cr3t-token");
        let mut r = Html::new(path.clone(), redactor);
        let started_at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let info = SuiteInfo {
            name: "partner".into(),
            file: "suites/partner.yaml".into(),
            digest: Some("ab".repeat(32)),
            version: Some("2.1".into()),
            target: "http://127.0.0.1:9".into(),
            checks: 4,
            profile: "botix",
        };
        r.event(&Event::RunStarted {
            started_at,
            suites: vec![info.clone()],
            warnings: Vec::new(),
        });
        r.event(&Event::SuiteStarted(info));
        r.event(&result(
            "limits",
            "rate_limit.headers",
            Outcome::pass("headers present").with_properties(vec![prop("p95_ms", 41u32)]),
        ));
        r.event(&result(
            "replay",
            "idempotency.replay",
            Outcome::fail(
                "replay acted twice",
                "1 effect",
                "2 effects with s3cr3t-token",
            )
            .with_evidence(vec![Evidence {
                label: "replay".into(),
                request: "POST http://127.0.0.1:9/public/v1/messages".into(),
                status: Some(201),
                request_id: Some("X-Request-Id: req-77".into()),
                elapsed_ms: None,
                detail: None,
            }]),
        ));
        r.event(&result(
            "retries",
            "webhook.sink_retries",
            Outcome::skipped("not run: --fail-fast stopped after partner/replay"),
        ));
        r.event(&Event::RunFinished {
            summary: Summary::default(),
            duration: Duration::from_secs(90),
            cancelled: false,
        });
        r.finish().unwrap();
        let html = std::fs::read_to_string(&path).unwrap();
        let at = |needle: &str| {
            html.find(needle)
                .unwrap_or_else(|| panic!("{needle:?} missing in {html}"))
        };
        // The checklist, in order, before anything else; uncovered points say so.
        let order = [
            "<h2>Checklist</h2>",
            "1. Idempotency",
            "2. Rate limits and backoff",
            "3. Webhooks",
            "4. Trace correlation",
            "Burst rehearsal",
            "<h2>What was certified</h2>",
            "<h2>Skipped checks</h2>",
            "<h2>Details</h2>",
            "<h2>Sign-off</h2>",
        ];
        for w in order.windows(2) {
            assert!(at(w[0]) < at(w[1]), "{:?} before {:?}", w[0], w[1]);
        }
        assert!(html.contains("NOT COVERED"), "{html}");
        assert!(
            !html.contains("Other checks"),
            "no plain checks ran: {html}"
        );
        assert!(html.contains("MUST failures") && html.contains("SHOULD warnings"));
        // What was certified.
        assert!(html.contains(&"ab".repeat(32)));
        assert!(html.contains("<td>2.1</td>"));
        assert!(html.contains("<td>botix</td>"), "profile: {html}");
        assert!(html.contains("2027-01-15T08:00:00Z"), "start: {html}");
        assert!(html.contains("2027-01-15T08:01:30Z"), "end: {html}");
        assert!(html.contains("--fail-fast stopped after partner/replay"));
        // Details: the failure comes before the skip and the pass, with its evidence.
        assert!(
            at("<h3><span class=\"v fail\">fail</span> replay")
                < at("<h3><span class=\"v skipped\">skipped</span> retries")
        );
        assert!(
            at("<h3><span class=\"v skipped\">skipped</span> retries")
                < at("<h3><span class=\"v pass\">pass</span> limits")
        );
        assert!(html.contains("X-Request-Id: req-77"));
        assert!(html.contains("p95_ms=41"));
        // Sign-off lines, print rules, and nothing a browser would fetch or run.
        for s in [
            "Certified by",
            "Date",
            "Signature",
            "@media print",
            "break-inside:avoid",
        ] {
            assert!(html.contains(s), "{s}: {html}");
        }
        assert!(
            !html.contains("<script") && !html.contains("http-equiv") && !html.contains("<link")
        );
        assert!(!html.contains("s3cr3t-token") && html.contains("[REDACTED]"));
    }
}
