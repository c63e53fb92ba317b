//! The HTML report: one self-contained page a person can read and sign off
//! (partner certification): the verdict, every check with its evidence and
//! request ids, and measured values. No scripts, no external assets; every
//! string is escaped and passed through the redactor.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::SystemTime;

use super::{prepare, Reporter};
use crate::events::{CheckResult, Event, SuiteInfo, Summary};
use crate::families::Verdict;
use crate::fmt_duration;
use crate::redact::Redactor;

pub struct Html {
    path: PathBuf,
    redactor: Redactor,
    started_at: SystemTime,
    suites: Vec<(SuiteInfo, Vec<CheckResult>)>,
    summary: Summary,
    duration: std::time::Duration,
    cancelled: bool,
    finished: bool,
}

impl Html {
    pub fn new(path: PathBuf, redactor: Redactor) -> Self {
        Html {
            path,
            redactor,
            started_at: SystemTime::now(),
            suites: Vec::new(),
            summary: Summary::default(),
            duration: std::time::Duration::ZERO,
            cancelled: true,
            finished: false,
        }
    }

    fn esc(&self, s: &str) -> String {
        let s = self.redactor.redact(s);
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' => out.push_str("&amp;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&#39;"),
                // Control characters from a target's text are shown, not kept.
                '\n' | '\t' => out.push(c),
                c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
                c => out.push(c),
            }
        }
        out
    }

    fn render(&self) -> String {
        let s = self.summary;
        let verdict = if self.cancelled { "error" } else { s.verdict() };
        let mut h = String::new();
        let _ = write!(
            h,
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>tminus report: {verdict}</title><style>{CSS}</style></head><body>"
        );
        let _ = write!(
            h,
            "<h1>tminus report <span class=\"v {verdict}\">{}</span></h1><p class=\"meta\">{} · tminus {} · {} · {} passed, {} failed, {} errors, {} skipped{}</p>",
            verdict.to_uppercase(),
            humantime::format_rfc3339_seconds(self.started_at),
            env!("CARGO_PKG_VERSION"),
            fmt_duration(self.duration),
            s.passed,
            s.failed,
            s.errored,
            s.skipped,
            if self.cancelled { " · cancelled" } else { "" }
        );
        for (info, checks) in &self.suites {
            let _ = write!(
                h,
                "<h2>{}{}</h2><p class=\"meta\">{} → {}</p><table><tr><th>check</th><th>verdict</th><th>time</th><th>what happened</th></tr>",
                self.esc(&info.name),
                info.version.as_ref().map(|v| format!(" <small>v{}</small>", self.esc(v))).unwrap_or_default(),
                self.esc(&info.file.display().to_string()),
                self.esc(&info.target)
            );
            for c in checks {
                let o = &c.outcome;
                let v = o.verdict.as_str();
                let _ = write!(
                    h,
                    "<tr class=\"{v}\"><td><b>{}</b><br><small>{}{}</small></td><td><span class=\"v {v}\">{v}</span></td><td class=\"t\">{}</td><td>{}",
                    self.esc(&c.id),
                    self.esc(c.kind),
                    c.description.as_ref().map(|d| format!(" · {}", self.esc(d))).unwrap_or_default(),
                    fmt_duration(c.duration),
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
                if !o.evidence.is_empty() && o.verdict != Verdict::Pass {
                    h.push_str("<details><summary>evidence</summary><ul>");
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
                h.push_str("</td></tr>");
            }
            h.push_str("</table>");
        }
        h.push_str("<p class=\"meta\">Secrets and sensitive headers are shown as [REDACTED].</p></body></html>\n");
        h
    }
}

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}\
table{border-collapse:collapse;width:100%;margin-bottom:2em}td,th{border-bottom:1px solid #ddd;padding:.4em;vertical-align:top;text-align:left}\
.v{padding:.1em .5em;border-radius:3px;color:#fff;font-weight:600;font-size:.85em}.pass{background:#1a7f37}.fail{background:#cf222e}\
.error{background:#8250df}.skipped{background:#9a6700}tr.pass,tr.fail,tr.error,tr.skipped{background:none}\
.meta,.props,small{color:#666}pre{white-space:pre-wrap;background:#f6f8fa;padding:.5em;max-height:12em;overflow:auto}\
dl{display:grid;grid-template-columns:auto 1fr;gap:.2em 1em;margin:.4em 0}dt{color:#666}dd{margin:0}code{background:#f6f8fa;padding:0 .2em}td.t{white-space:nowrap}";

impl Reporter for Html {
    fn event(&mut self, e: &Event) {
        match e {
            Event::RunStarted { started_at, .. } => self.started_at = *started_at,
            Event::SuiteStarted(info) => self.suites.push((info.clone(), Vec::new())),
            Event::CheckFinished(r) => {
                self.summary.add(r.outcome.verdict);
                if let Some((_, checks)) = self.suites.last_mut() {
                    checks.push((**r).clone());
                }
            }
            Event::RunFinished {
                duration,
                cancelled,
                ..
            } => {
                self.duration = *duration;
                self.cancelled = *cancelled;
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
