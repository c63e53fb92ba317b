//! Planning the webhook family: scheme resolved, secret decoded once (and
//! never shown in Debug output), templates compiled with the run-time
//! variables `${var.webhook_id}` (sender body) and `${var.sink_url}` (sink
//! triggers), defaults from the catalogue applied.

use std::fmt;
use std::time::Duration;

use serde_saphyr::{Location, Spanned};

use crate::families::webhook::spec::{
    CustomSchemeSpec, WebhookSenderSpec, WebhookSinkSpec, WebhookSpec,
};
use crate::model::jsonpath::JsonPath;
use crate::model::scalar::{StatusPattern, StatusSet};
use crate::model::template::Template;
use crate::plan::request::{RequestPlan, UrlPlan};
use crate::plan::{CounterPlan, PlanCtx};
use crate::signing::{CustomScheme, DigestEncoding, Scheme, SecretEncoding};

/// Run-time variable holding the delivery id in a sender body template.
pub const WEBHOOK_ID_VAR: &str = "webhook_id";
/// Run-time variable holding tminus's receiver URL in sink triggers.
pub const SINK_URL_VAR: &str = "sink_url";

/// The default event body: a `message.created` event whose id is the delivery id.
/// The non-ASCII `é` makes re-serialization observable (`\u00e9` vs raw UTF-8).
pub const DEFAULT_BODY: &str = r#"{"id":"${var.webhook_id}","type":"message.created","data":{"message_id":"msg_1","amount":100,"text":"café"}}"#;

/// A decoded signing key; Debug never shows it.
#[derive(Clone)]
pub struct SecretKey(pub Vec<u8>);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey([REDACTED])")
    }
}

#[derive(Debug, Clone)]
pub struct WebhookSenderPlan {
    pub case: &'static str,
    pub url: UrlPlan,
    pub scheme: Scheme,
    pub key: SecretKey,
    pub body: Template,
    pub event: String,
    pub headers: Vec<(String, Template)>,
    pub effects: Option<CounterPlan>,
    pub ack_within: Duration,
    pub tolerance: Duration,
    pub accept: StatusSet,
    pub reject: StatusSet,
    /// `webhook.burst`: deliveries and the window they are spread over.
    pub count: u32,
    pub over: Duration,
}

#[derive(Debug, Clone)]
pub struct WebhookSinkPlan {
    pub case: &'static str,
    pub scheme: Scheme,
    pub key: SecretKey,
    pub trigger: Vec<RequestPlan>,
    pub event: Option<String>,
    pub respond: Vec<u16>,
    /// `Retry-After` seconds on tminus's 429/503 answers.
    pub retry_after: u64,
    /// Hold the first attempt this long (only `webhook.sink_timeout`).
    pub hang: Option<Duration>,
    pub max_sender_timeout: Duration,
    /// Expected delays between consecutive attempts (normalized).
    pub schedule: Vec<Duration>,
    pub max_attempts: u32,
    pub tolerance_pct: f64,
    pub tolerance_floor: Duration,
    pub wait: Duration,
    pub quiet: Duration,
    pub trace_json: Option<JsonPath>,
}

const DEFAULT_SCHEDULE: [u64; 5] = [30, 300, 1800, 7200, 21600];

impl PlanCtx<'_> {
    fn webhook_scheme(
        &mut self,
        scheme: &Option<Spanned<String>>,
        custom: &Option<CustomSchemeSpec>,
        default: &str,
        at: Location,
    ) -> Scheme {
        let (name, loc) = match scheme {
            Some(s) => (s.value.as_str(), s.referenced),
            None => (default, at),
        };
        let res = if name == "custom" {
            match custom {
                None => Err("`scheme: custom` needs a `custom:` description".to_owned()),
                Some(c) => self.custom_scheme(c),
            }
        } else {
            if custom.is_some() {
                self.error(loc, "`custom:` is only read with `scheme: custom`");
            }
            Scheme::builtin(name)
        };
        res.unwrap_or_else(|e| {
            self.error(loc, e);
            Scheme::builtin(default).expect("default scheme")
        })
    }

    fn custom_scheme(&mut self, c: &CustomSchemeSpec) -> Result<Scheme, String> {
        let secret_encoding = match &c.secret_encoding {
            None => SecretEncoding::Raw,
            Some(s) => SecretEncoding::parse(&s.value).unwrap_or_else(|e| {
                self.error(s.referenced, e);
                SecretEncoding::Raw
            }),
        };
        let digest_encoding = match &c.digest_encoding {
            None => DigestEncoding::Hex,
            Some(s) => DigestEncoding::parse(&s.value).unwrap_or_else(|e| {
                self.error(s.referenced, e);
                DigestEncoding::Hex
            }),
        };
        Scheme::custom(&CustomScheme {
            signature_header: c.signature_header.clone(),
            signature_prefix: c.signature_prefix.clone(),
            id_header: c.id_header.clone(),
            timestamp_header: c.timestamp_header.clone(),
            event_header: c.event_header.clone(),
            secret_encoding,
            digest_encoding,
            content: c.content.value.clone(),
        })
        .inspect_err(|e| self.error(c.content.referenced, e.clone()))
    }

    fn webhook_key(&mut self, scheme: &Scheme, secret: &Spanned<String>) -> SecretKey {
        let t = self.template(secret);
        let Some(text) = t.as_literal() else {
            self.error(
                secret.referenced,
                "the secret cannot use `${uuid}`/`${ulid}`",
            );
            return SecretKey(Vec::new());
        };
        // Registered even when written inline, so no report ever shows it
        // (very short test values would blank ordinary text, so not those).
        if text.len() >= 6 {
            self.redactor.add(&text);
        }
        match scheme.decode_secret(&text) {
            Ok(k) => SecretKey(k),
            Err(e) => {
                self.error(secret.referenced, format!("{e} (scheme `{}`)", scheme.name));
                SecretKey(Vec::new())
            }
        }
    }

    pub fn webhook_sender(
        &mut self,
        case: &'static str,
        s: &WebhookSenderSpec,
    ) -> WebhookSenderPlan {
        let errors_before = self.diags.len();
        let scheme = self.webhook_scheme(&s.scheme, &s.custom, "standard", s.id.referenced);
        // A secret is only judged against a scheme that planned cleanly.
        let key = if self.diags.len() == errors_before {
            self.webhook_key(&scheme, &s.secret)
        } else {
            SecretKey(Vec::new())
        };
        let url = if s.receiver.value.starts_with("http://")
            || s.receiver.value.starts_with("https://")
        {
            UrlPlan::Absolute(self.template(&s.receiver))
        } else {
            if !s.receiver.value.starts_with('/') {
                self.error(
                    s.receiver.referenced,
                    "receiver must be a path starting with `/` or an absolute URL",
                );
            }
            UrlPlan::Path(self.template(&s.receiver))
        };
        self.captures.insert(WEBHOOK_ID_VAR.to_owned());
        let body = match &s.body {
            Some(b) => self.template(b),
            None => self.template_at(DEFAULT_BODY, s.id.referenced),
        };
        let headers = s
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), self.template_at(&v.value.0, v.referenced)))
            .collect();
        let effects = s.effects.as_ref().map(|c| self.counter(c));
        let count = match &s.count {
            None => 200,
            Some(c) if (1..=10_000).contains(&c.value) => c.value,
            Some(c) => {
                self.error(c.referenced, "count must be 1 to 10000");
                1
            }
        };
        WebhookSenderPlan {
            count,
            over: s.over.map_or(Duration::from_secs(10), |d| d.0),
            case,
            url,
            scheme,
            key,
            body,
            event: s.event.clone().unwrap_or_else(|| "message.created".into()),
            headers,
            effects,
            ack_within: s
                .ack_within
                .as_ref()
                .map_or(Duration::from_secs(2), |d| d.value.0),
            tolerance: s
                .tolerance
                .as_ref()
                .map_or(Duration::from_secs(300), |d| d.value.0),
            accept: s.accept_status.as_ref().map_or_else(
                || StatusSet(vec![StatusPattern::Class(2)]),
                |v| v.value.clone(),
            ),
            reject: s.reject_status.as_ref().map_or_else(
                || StatusSet(vec![StatusPattern::Class(4)]),
                |v| v.value.clone(),
            ),
        }
    }

    pub fn webhook_sink(&mut self, case: &'static str, s: &WebhookSinkSpec) -> WebhookSinkPlan {
        let errors_before = self.diags.len();
        let scheme = self.webhook_scheme(&s.scheme, &s.custom, "botix", s.id.referenced);
        // A secret is only judged against a scheme that planned cleanly.
        let key = if self.diags.len() == errors_before {
            self.webhook_key(&scheme, &s.secret)
        } else {
            SecretKey(Vec::new())
        };
        if s.trigger.is_empty() {
            self.error(
                s.id.referenced,
                "a sink check needs `trigger:` requests that make the target deliver",
            );
        }
        self.captures.insert(SINK_URL_VAR.to_owned());
        let trigger = s
            .trigger
            .iter()
            .map(|r| self.request(r, s.id.referenced))
            .collect();
        let mut schedule: Vec<Duration> = match &s.schedule {
            Some(v) => v.iter().map(|d| d.0).collect(),
            None => DEFAULT_SCHEDULE
                .iter()
                .map(|s| Duration::from_secs(*s))
                .collect(),
        };
        match s
            .schedule_mode
            .as_ref()
            .map(|m| (m.value.as_str(), m.referenced))
        {
            None | Some(("between", _)) => {}
            Some(("since_first", loc)) => {
                // Offsets from the first attempt become gaps between attempts.
                let mut prev = Duration::ZERO;
                let mut gaps = Vec::new();
                for d in &schedule {
                    if *d < prev {
                        self.error(loc, "a `since_first` schedule must be increasing");
                    }
                    gaps.push(d.saturating_sub(prev));
                    prev = *d;
                }
                schedule = gaps;
            }
            Some((other, loc)) => self.error(
                loc,
                format!("unknown schedule_mode `{other}`: use `between` or `since_first`"),
            ),
        }
        let max_attempts = s.max_attempts.unwrap_or(schedule.len() as u32 + 1);
        if max_attempts == 0 || max_attempts as usize > schedule.len() + 1 {
            self.error(
                s.id.referenced,
                format!(
                    "max_attempts {max_attempts} needs {} schedule delays, the schedule has {}",
                    max_attempts.saturating_sub(1),
                    schedule.len()
                ),
            );
        }
        let respond = if s.respond.is_empty() {
            match case {
                "webhook.sink_retries" => vec![500],
                "webhook.sink_stops_on_success" => vec![500, 200],
                "webhook.sink_stops_on_gone" => vec![410],
                "webhook.sink_respects_retry_after" => vec![429, 200],
                _ => vec![200],
            }
        } else {
            s.respond.clone()
        };
        if respond.iter().any(|c| !(100..=599).contains(c)) {
            self.error(s.id.referenced, "respond: statuses must be 100..599");
        }
        if case == "webhook.sink_timeout" {
            let hang = s.hang.map_or(Duration::from_secs(40), |d| d.0);
            let limit = s
                .max_sender_timeout
                .map_or(Duration::from_secs(30), |d| d.0);
            if hang <= limit {
                self.error(
                    s.id.referenced,
                    format!(
                        "hang ({}) must be longer than max_sender_timeout ({}), or a patient sender looks like a timeout",
                        crate::fmt_duration(hang),
                        crate::fmt_duration(limit)
                    ),
                );
            }
        }
        let used = (max_attempts.saturating_sub(1) as usize).min(schedule.len());
        let last = used.checked_sub(1).map(|i| schedule[i]);
        WebhookSinkPlan {
            case,
            scheme,
            key,
            trigger,
            event: s.event.clone(),
            respond,
            retry_after: s.retry_after.unwrap_or(120),
            hang: (case == "webhook.sink_timeout")
                .then(|| s.hang.map_or(Duration::from_secs(40), |d| d.0)),
            max_sender_timeout: s
                .max_sender_timeout
                .map_or(Duration::from_secs(30), |d| d.0),
            schedule,
            max_attempts,
            tolerance_pct: s.tolerance_pct.unwrap_or(10.0),
            tolerance_floor: s.tolerance_floor.map_or(Duration::from_millis(50), |d| d.0),
            wait: s.wait.map_or(Duration::from_secs(10), |d| d.0),
            quiet: s.quiet.map_or_else(
                || {
                    last.unwrap_or(Duration::from_secs(1))
                        .min(Duration::from_secs(10))
                },
                |d| d.0,
            ),
            trace_json: s
                .trace_json
                .as_ref()
                .map(|p| self.json_path(&p.value, p.referenced)),
        }
    }
}

/// A planned `webhook.*` check: the sender or the sink role.
#[derive(Debug)]
pub enum WebhookPlan {
    Sender(WebhookSenderPlan),
    Sink(WebhookSinkPlan),
}

/// Plans a check of the webhook family.
pub fn plan(ctx: &mut PlanCtx<'_>, spec: &WebhookSpec) -> WebhookPlan {
    use WebhookSpec as W;
    let kind = spec.kind_name();
    match spec {
        W::AcceptsValid(s)
        | W::RejectsMissingHeaders(s)
        | W::RejectsForged(s)
        | W::AcceptsRawBytes(s)
        | W::RejectsReserialized(s)
        | W::RejectsTruncated(s)
        | W::RejectsWrongScheme(s)
        | W::RejectsStale(s)
        | W::RejectsFuture(s)
        | W::DedupesReplay(s)
        | W::DedupesRetry(s)
        | W::RejectsTampered(s)
        | W::KeyRotation(s)
        | W::RejectsDottedId(s)
        | W::Burst(s) => WebhookPlan::Sender(ctx.webhook_sender(kind, s)),
        W::SinkDelivery(s)
        | W::SinkRetries(s)
        | W::SinkStopsOnSuccess(s)
        | W::SinkStopsOnGone(s)
        | W::SinkTrace(s)
        | W::SinkRespectsRetryAfter(s)
        | W::SinkTimeout(s) => WebhookPlan::Sink(ctx.webhook_sink(kind, s)),
    }
}
