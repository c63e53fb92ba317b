//! Planning the webhook family: scheme resolved, secret decoded once (and
//! never shown in Debug output), templates compiled with the run-time
//! variables `${var.webhook_id}` (sender body) and `${var.sink_url}` (sink
//! triggers), defaults (`spec::defaults`, the catalogue's values) applied.

use std::fmt;
use std::time::Duration;

use serde_saphyr::{Location, Spanned};

use crate::context::request::{RequestPlan, UrlPlan};
use crate::context::{CounterPlan, PlanCtx, Scope};
use crate::families::webhook::spec::{
    defaults as d, CustomSchemeSpec, WebhookSenderSpec, WebhookSinkSpec, WebhookSpec, KINDS,
};
use crate::model::jsonpath::JsonPath;
use crate::model::scalar::StatusSet;
use crate::model::template::Template;
use crate::signing::{CustomScheme, DigestEncoding, Scheme, SecretEncoding};
use crate::spec::kinds::Param;

/// Run-time variable holding the delivery id in a sender body template.
pub const WEBHOOK_ID_VAR: &str = "webhook_id";
/// Run-time variable holding tminus's receiver URL in sink triggers.
pub const SINK_URL_VAR: &str = "sink_url";

/// Which sender check a plan runs: one variant per sender-role kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderCase {
    AcceptsValid,
    RejectsMissingHeaders,
    RejectsForged,
    AcceptsRawBytes,
    RejectsReserialized,
    RejectsTruncated,
    RejectsWrongScheme,
    RejectsStale,
    RejectsFuture,
    DedupesReplay,
    ReplayNewId,
    DedupesRetry,
    RejectsTampered,
    KeyRotation,
    RejectsDottedId,
    Burst,
    AcceptsHeaderCase,
    ConstantTimeCompare,
}

impl SenderCase {
    /// The kind's name as written in suites, for messages.
    pub fn kind_name(self) -> &'static str {
        match self {
            Self::AcceptsValid => "webhook.accepts_valid",
            Self::RejectsMissingHeaders => "webhook.rejects_missing_headers",
            Self::RejectsForged => "webhook.rejects_forged",
            Self::AcceptsRawBytes => "webhook.accepts_raw_bytes",
            Self::RejectsReserialized => "webhook.rejects_reserialized",
            Self::RejectsTruncated => "webhook.rejects_truncated",
            Self::RejectsWrongScheme => "webhook.rejects_wrong_scheme",
            Self::RejectsStale => "webhook.rejects_stale",
            Self::RejectsFuture => "webhook.rejects_future",
            Self::DedupesReplay => "webhook.dedupes_replay",
            Self::ReplayNewId => "webhook.replay_new_id",
            Self::DedupesRetry => "webhook.dedupes_retry",
            Self::RejectsTampered => "webhook.rejects_tampered",
            Self::KeyRotation => "webhook.key_rotation",
            Self::RejectsDottedId => "webhook.rejects_dotted_id",
            Self::Burst => "webhook.burst",
            Self::AcceptsHeaderCase => "webhook.accepts_header_case",
            Self::ConstantTimeCompare => "webhook.constant_time_compare",
        }
    }

    /// Kinds whose verdict is "processed once" while every answer is a 2xx:
    /// only a side-effect counter can tell, so `effects:` is required.
    pub fn needs_effects(self) -> bool {
        match self {
            Self::DedupesReplay | Self::DedupesRetry | Self::ReplayNewId => true,
            Self::AcceptsValid
            | Self::RejectsMissingHeaders
            | Self::RejectsForged
            | Self::AcceptsRawBytes
            | Self::RejectsReserialized
            | Self::RejectsTruncated
            | Self::RejectsWrongScheme
            | Self::RejectsStale
            | Self::RejectsFuture
            | Self::RejectsTampered
            | Self::KeyRotation
            | Self::RejectsDottedId
            | Self::Burst
            | Self::AcceptsHeaderCase
            | Self::ConstantTimeCompare => false,
        }
    }
}

/// Which sink check a plan runs: one variant per `webhook.sink_*` kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkCase {
    Delivery,
    Retries,
    StopsOnSuccess,
    StopsOnGone,
    Trace,
    RespectsRetryAfter,
    Timeout,
}

impl SinkCase {
    /// The kind's name as written in suites, for messages.
    pub fn kind_name(self) -> &'static str {
        match self {
            Self::Delivery => "webhook.sink_delivery",
            Self::Retries => "webhook.sink_retries",
            Self::StopsOnSuccess => "webhook.sink_stops_on_success",
            Self::StopsOnGone => "webhook.sink_stops_on_gone",
            Self::Trace => "webhook.sink_trace",
            Self::RespectsRetryAfter => "webhook.sink_respects_retry_after",
            Self::Timeout => "webhook.sink_timeout",
        }
    }

    /// What tminus answers, attempt by attempt, when `respond:` is not written.
    fn default_respond(self) -> &'static [u16] {
        match self {
            Self::Delivery => d::RESPOND_DELIVERY,
            Self::Retries => d::RESPOND_RETRIES,
            Self::StopsOnSuccess => d::RESPOND_STOPS_ON_SUCCESS,
            Self::StopsOnGone => d::RESPOND_STOPS_ON_GONE,
            Self::Trace => d::RESPOND_TRACE,
            Self::RespectsRetryAfter => d::RESPOND_RETRY_AFTER,
            Self::Timeout => d::RESPOND_TIMEOUT,
        }
    }
}

/// How a sink suite writes its expected `schedule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleMode {
    /// Each delay is counted from the previous attempt.
    Between,
    /// Each delay is counted from the first attempt.
    SinceFirst,
}

impl ScheduleMode {
    /// The name a suite writes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Between => "between",
            Self::SinceFirst => "since_first",
        }
    }
}

/// The parameters `kind` reads: its `KINDS` row.
fn kind_params(kind: &str) -> &'static [Param] {
    KINDS
        .iter()
        .find(|k| k.name == kind)
        .map_or(&[], |k| k.params)
}

/// `a, b, c and 5 more`.
fn short_list(names: &[&str]) -> String {
    match names {
        [] => "no kind".into(),
        [one] => (*one).to_owned(),
        n if n.len() <= 4 => format!("{} and {}", n[..n.len() - 1].join(", "), n[n.len() - 1]),
        n => format!("{} and {} more", n[..3].join(", "), n.len() - 3),
    }
}

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
    pub case: SenderCase,
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
    /// `webhook.constant_time_compare`: forged deliveries timed, and the
    /// latency difference the probe resolves.
    pub samples: u32,
    pub floor: Duration,
}

#[derive(Debug, Clone)]
pub struct WebhookSinkPlan {
    pub case: SinkCase,
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
    /// How the suite wrote `schedule` (kept for the record: `schedule` is
    /// already normalized to gaps).
    pub schedule_mode: ScheduleMode,
    /// Expected delays between consecutive attempts (normalized).
    pub schedule: Vec<Duration>,
    pub max_attempts: u32,
    pub tolerance_pct: f64,
    pub tolerance_floor: Duration,
    pub wait: Duration,
    pub quiet: Duration,
    pub trace_json: Option<JsonPath>,
    /// The suite's document, when it describes events (`webhooks:`): every
    /// delivery is judged against it (`payload`, CON-004).
    pub contract: Option<std::sync::Arc<crate::contract::Contract>>,
}

impl PlanCtx<'_> {
    /// Reports each parameter written (`Some(position)`) that `kind`'s
    /// `KINDS` row does not list: the kind would silently ignore it.
    fn webhook_unread(&mut self, kind: &'static str, written: &[(&str, Option<Location>)]) {
        let mut unread: Vec<(&str, Location)> = written
            .iter()
            .filter_map(|&(name, at)| Some((name, at?)))
            .filter(|(name, _)| !kind_params(kind).iter().any(|p| p.name == *name))
            .collect();
        unread.sort_by_key(|(_, at)| (at.line(), at.column()));
        for (name, at) in unread {
            let readers: Vec<&str> = KINDS
                .iter()
                .filter(|k| k.params.iter().any(|p| p.name == name))
                .map(|k| k.name)
                .collect();
            self.error(
                at,
                format!(
                    "`{name}` only applies to {}, not to {kind}",
                    short_list(&readers)
                ),
            );
        }
    }

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
            Ok(k) => {
                // A receiver holds the key and may echo it: the key itself
                // and its hex and base64 are masked too.
                self.redactor.add_key(&k);
                SecretKey(k)
            }
            Err(e) => {
                self.error(secret.referenced, format!("{e} (scheme `{}`)", scheme.name));
                SecretKey(Vec::new())
            }
        }
    }

    pub fn webhook_sender(&mut self, case: SenderCase, s: &WebhookSenderSpec) -> WebhookSenderPlan {
        let kind = case.kind_name();
        self.webhook_unread(
            kind,
            &[
                ("effects", s.effects.as_ref().map(|v| v.referenced)),
                ("ack_within", s.ack_within.as_ref().map(|v| v.referenced)),
                ("tolerance", s.tolerance.as_ref().map(|v| v.referenced)),
                (
                    "accept_status",
                    s.accept_status.as_ref().map(|v| v.referenced),
                ),
                (
                    "reject_status",
                    s.reject_status.as_ref().map(|v| v.referenced),
                ),
                ("count", s.count.as_ref().map(|v| v.referenced)),
                ("over", s.over.as_ref().map(|v| v.referenced)),
                ("samples", s.samples.as_ref().map(|v| v.referenced)),
                ("floor", s.floor.as_ref().map(|v| v.referenced)),
            ],
        );
        if case.needs_effects() && s.effects.is_none() {
            self.error(
                s.id.referenced,
                format!("{kind} needs `effects:` (a side-effect counter): a 2xx alone cannot show whether the event was processed once"),
            );
        }
        let errors_before = self.diags.len();
        let scheme = self.webhook_scheme(&s.scheme, &s.custom, d::SENDER_SCHEME, s.id.referenced);
        let scheme_clean = self.diags.len() == errors_before;
        if scheme_clean && case == SenderCase::ReplayNewId && scheme.id_header.is_none() {
            let at = s.scheme.as_ref().map_or(s.id.referenced, |v| v.referenced);
            self.error(
                at,
                format!(
                    "{kind} re-sends a delivery under a new delivery id, and scheme `{}` has no id header (a replay there is webhook.dedupes_replay)",
                    scheme.name
                ),
            );
        }
        // A secret is only judged against a scheme that planned cleanly.
        let key = if scheme_clean {
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
            None => self.template_at(d::BODY, s.id.referenced),
        };
        if matches!(
            case,
            SenderCase::AcceptsRawBytes | SenderCase::RejectsReserialized
        ) {
            let mut scope = Scope::new();
            scope.insert(WEBHOOK_ID_VAR.into(), "msg_0".into());
            if serde_json::from_str::<serde_json::Value>(&body.render(&scope)).is_err() {
                let at = s.body.as_ref().map_or(s.id.referenced, |b| b.referenced);
                self.error(
                    at,
                    format!("{kind} re-serializes the body, so `body` must be JSON"),
                );
            }
        }
        let headers = s
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), self.template_at(&v.value.0, v.referenced)))
            .collect();
        let effects = s.effects.as_ref().map(|c| self.counter(&c.value));
        let count = match &s.count {
            None => d::COUNT,
            Some(c) if (1..=d::COUNT_MAX).contains(&c.value) => c.value,
            Some(c) => {
                self.error(c.referenced, "count must be 1 to 10000");
                1
            }
        };
        let samples = match &s.samples {
            None => d::SAMPLES,
            Some(n) if (d::SAMPLES_MIN..=d::SAMPLES_MAX).contains(&n.value) => n.value,
            Some(n) => {
                self.error(
                    n.referenced,
                    format!("samples must be {} to {}", d::SAMPLES_MIN, d::SAMPLES_MAX),
                );
                d::SAMPLES_MIN
            }
        };
        let floor = s.floor.as_ref().map_or(d::FLOOR, |v| v.value.0);
        if floor.is_zero() {
            let at = s.floor.as_ref().map_or(s.id.referenced, |v| v.referenced);
            self.error(
                at,
                "floor must be above zero: no probe resolves a difference of 0",
            );
        }
        WebhookSenderPlan {
            samples,
            floor,
            count,
            over: s.over.as_ref().map_or(d::OVER, |v| v.value.0),
            case,
            url,
            scheme,
            key,
            body,
            event: s.event.clone().unwrap_or_else(|| d::EVENT.into()),
            headers,
            effects,
            ack_within: s.ack_within.as_ref().map_or(
                if case == SenderCase::AcceptsValid {
                    d::ACK_DEADLINE
                } else {
                    d::ACK_WITHIN
                },
                |v| v.value.0,
            ),
            tolerance: s.tolerance.as_ref().map_or(d::TOLERANCE, |v| v.value.0),
            accept: s
                .accept_status
                .as_ref()
                .map_or_else(|| StatusSet(d::ACCEPT_STATUS.to_vec()), |v| v.value.clone()),
            reject: s
                .reject_status
                .as_ref()
                .map_or_else(|| StatusSet(d::REJECT_STATUS.to_vec()), |v| v.value.clone()),
        }
    }

    pub fn webhook_sink(&mut self, case: SinkCase, s: &WebhookSinkSpec) -> WebhookSinkPlan {
        let kind = case.kind_name();
        self.webhook_unread(
            kind,
            &[
                ("event", s.event.as_ref().map(|v| v.referenced)),
                ("schedule", s.schedule.as_ref().map(|v| v.referenced)),
                (
                    "schedule_mode",
                    s.schedule_mode.as_ref().map(|v| v.referenced),
                ),
                (
                    "max_attempts",
                    s.max_attempts.as_ref().map(|v| v.referenced),
                ),
                (
                    "tolerance_pct",
                    s.tolerance_pct.as_ref().map(|v| v.referenced),
                ),
                (
                    "tolerance_floor",
                    s.tolerance_floor.as_ref().map(|v| v.referenced),
                ),
                ("quiet", s.quiet.as_ref().map(|v| v.referenced)),
                ("retry_after", s.retry_after.as_ref().map(|v| v.referenced)),
                ("hang", s.hang.as_ref().map(|v| v.referenced)),
                (
                    "max_sender_timeout",
                    s.max_sender_timeout.as_ref().map(|v| v.referenced),
                ),
                ("trace_json", s.trace_json.as_ref().map(|v| v.referenced)),
            ],
        );
        let errors_before = self.diags.len();
        let scheme = self.webhook_scheme(&s.scheme, &s.custom, d::SINK_SCHEME, s.id.referenced);
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
            Some(v) => v.value.iter().map(|delay| delay.0).collect(),
            None => d::SCHEDULE.to_vec(),
        };
        let (mode, mode_at) = s
            .schedule_mode
            .as_ref()
            .map_or((d::SCHEDULE_MODE, s.id.referenced), |m| {
                (m.value.as_str(), m.referenced)
            });
        let schedule_mode = match mode {
            "between" => ScheduleMode::Between,
            "since_first" => {
                // Offsets from the first attempt become gaps between attempts.
                let mut prev = Duration::ZERO;
                let mut gaps = Vec::new();
                for &offset in &schedule {
                    if offset < prev {
                        self.error(mode_at, "a `since_first` schedule must be increasing");
                    }
                    gaps.push(offset.saturating_sub(prev));
                    prev = offset;
                }
                schedule = gaps;
                ScheduleMode::SinceFirst
            }
            other => {
                self.error(
                    mode_at,
                    format!("unknown schedule_mode `{other}`: use `between` or `since_first`"),
                );
                ScheduleMode::Between
            }
        };
        let max_attempts = s
            .max_attempts
            .as_ref()
            .map_or(schedule.len() as u32 + 1, |m| m.value);
        if max_attempts == 0 || max_attempts as usize > schedule.len() + 1 {
            let at = s
                .max_attempts
                .as_ref()
                .map_or(s.id.referenced, |m| m.referenced);
            self.error(
                at,
                format!(
                    "max_attempts {max_attempts} needs {} schedule delays, the schedule has {}",
                    max_attempts.saturating_sub(1),
                    schedule.len()
                ),
            );
        }
        let respond = if s.respond.is_empty() {
            case.default_respond().to_vec()
        } else {
            s.respond.clone()
        };
        if respond.iter().any(|c| !(100..=599).contains(c)) {
            self.error(s.id.referenced, "respond: statuses must be 100..599");
        }
        let throttles = |c: &u16| *c == 429 || *c == 503;
        if case == SinkCase::RespectsRetryAfter && !respond.first().is_some_and(throttles) {
            self.error(
                s.id.referenced,
                format!("{kind} needs a first answer of 429 or 503 in `respond` (that is what carries Retry-After)"),
            );
        }
        if let Some(ra) = &s.retry_after {
            if !respond.iter().any(throttles) {
                self.error(
                    ra.referenced,
                    "`retry_after` is only sent with 429/503 answers, and `respond` has none",
                );
            }
        }
        let hang = s.hang.as_ref().map_or(d::HANG, |v| v.value.0);
        let max_sender_timeout = s
            .max_sender_timeout
            .as_ref()
            .map_or(d::MAX_SENDER_TIMEOUT, |v| v.value.0);
        if case == SinkCase::Timeout && hang <= max_sender_timeout {
            self.error(
                s.hang.as_ref().map_or(s.id.referenced, |h| h.referenced),
                format!(
                    "hang ({}) must be longer than max_sender_timeout ({}), or a patient sender looks like a timeout",
                    crate::fmt_duration(hang),
                    crate::fmt_duration(max_sender_timeout)
                ),
            );
        }
        let used = (max_attempts.saturating_sub(1) as usize).min(schedule.len());
        let last = used.checked_sub(1).map(|i| schedule[i]);
        WebhookSinkPlan {
            contract: self.contract.clone().filter(|c| !c.webhooks().is_empty()),
            case,
            scheme,
            key,
            trigger,
            event: s.event.as_ref().map(|e| e.value.clone()),
            respond,
            retry_after: s.retry_after.as_ref().map_or(d::RETRY_AFTER, |r| r.value),
            hang: (case == SinkCase::Timeout).then_some(hang),
            max_sender_timeout,
            schedule_mode,
            schedule,
            max_attempts,
            tolerance_pct: s
                .tolerance_pct
                .as_ref()
                .map_or(d::TOLERANCE_PCT, |t| t.value),
            tolerance_floor: s
                .tolerance_floor
                .as_ref()
                .map_or(d::TOLERANCE_FLOOR, |v| v.value.0),
            wait: s.wait.map_or(d::WAIT, |v| v.0),
            quiet: s.quiet.as_ref().map_or_else(
                || last.unwrap_or(d::QUIET_NO_RETRY).min(d::QUIET_MAX),
                |v| v.value.0,
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

/// Plans a check of the webhook family: the kind becomes a typed case.
pub fn plan(ctx: &mut PlanCtx<'_>, spec: &WebhookSpec) -> WebhookPlan {
    use SenderCase as S;
    use SinkCase as K;
    use WebhookSpec as W;
    let (case, s) = match spec {
        W::AcceptsValid(s) => (S::AcceptsValid, s),
        W::RejectsMissingHeaders(s) => (S::RejectsMissingHeaders, s),
        W::RejectsForged(s) => (S::RejectsForged, s),
        W::AcceptsRawBytes(s) => (S::AcceptsRawBytes, s),
        W::RejectsReserialized(s) => (S::RejectsReserialized, s),
        W::RejectsTruncated(s) => (S::RejectsTruncated, s),
        W::RejectsWrongScheme(s) => (S::RejectsWrongScheme, s),
        W::RejectsStale(s) => (S::RejectsStale, s),
        W::RejectsFuture(s) => (S::RejectsFuture, s),
        W::DedupesReplay(s) => (S::DedupesReplay, s),
        W::ReplayNewId(s) => (S::ReplayNewId, s),
        W::DedupesRetry(s) => (S::DedupesRetry, s),
        W::RejectsTampered(s) => (S::RejectsTampered, s),
        W::KeyRotation(s) => (S::KeyRotation, s),
        W::RejectsDottedId(s) => (S::RejectsDottedId, s),
        W::Burst(s) => (S::Burst, s),
        W::AcceptsHeaderCase(s) => (S::AcceptsHeaderCase, s),
        W::ConstantTimeCompare(s) => (S::ConstantTimeCompare, s),
        W::SinkDelivery(s) => return WebhookPlan::Sink(ctx.webhook_sink(K::Delivery, s)),
        W::SinkRetries(s) => return WebhookPlan::Sink(ctx.webhook_sink(K::Retries, s)),
        W::SinkStopsOnSuccess(s) => {
            return WebhookPlan::Sink(ctx.webhook_sink(K::StopsOnSuccess, s))
        }
        W::SinkStopsOnGone(s) => return WebhookPlan::Sink(ctx.webhook_sink(K::StopsOnGone, s)),
        W::SinkTrace(s) => return WebhookPlan::Sink(ctx.webhook_sink(K::Trace, s)),
        W::SinkRespectsRetryAfter(s) => {
            return WebhookPlan::Sink(ctx.webhook_sink(K::RespectsRetryAfter, s))
        }
        W::SinkTimeout(s) => return WebhookPlan::Sink(ctx.webhook_sink(K::Timeout, s)),
    };
    WebhookPlan::Sender(ctx.webhook_sender(case, s))
}

impl WebhookPlan {
    /// The most requests this check sends (`context::budget`): deliveries
    /// to the receiver, counter reads, or the triggers of a sink check.
    pub fn requests(&self) -> crate::context::budget::Requests {
        use crate::context::budget::{Requests, COUNTER_READS};
        match self {
            WebhookPlan::Sender(s) => {
                let counters = if s.effects.is_some() {
                    COUNTER_READS
                } else {
                    0
                };
                let sends = match s.case {
                    SenderCase::Burst => u64::from(s.count),
                    // The forged deliveries and a valid control.
                    SenderCase::ConstantTimeCompare => u64::from(s.samples) + 1,
                    // Every hostile case sends a delivery and a control.
                    _ => 3,
                };
                Requests::own(sends + counters)
            }
            WebhookPlan::Sink(s) => Requests::own(s.trigger.len() as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::kinds::DefaultValue;

    const SENDERS: [SenderCase; 18] = [
        SenderCase::AcceptsValid,
        SenderCase::RejectsMissingHeaders,
        SenderCase::RejectsForged,
        SenderCase::AcceptsRawBytes,
        SenderCase::RejectsReserialized,
        SenderCase::RejectsTruncated,
        SenderCase::RejectsWrongScheme,
        SenderCase::RejectsStale,
        SenderCase::RejectsFuture,
        SenderCase::DedupesReplay,
        SenderCase::ReplayNewId,
        SenderCase::DedupesRetry,
        SenderCase::RejectsTampered,
        SenderCase::KeyRotation,
        SenderCase::RejectsDottedId,
        SenderCase::Burst,
        SenderCase::AcceptsHeaderCase,
        SenderCase::ConstantTimeCompare,
    ];
    const SINKS: [SinkCase; 7] = [
        SinkCase::Delivery,
        SinkCase::Retries,
        SinkCase::StopsOnSuccess,
        SinkCase::StopsOnGone,
        SinkCase::Trace,
        SinkCase::RespectsRetryAfter,
        SinkCase::Timeout,
    ];

    /// The cases name every kind of the enum once, in table order.
    #[test]
    fn cases_name_the_kinds() {
        let names: Vec<&str> = SENDERS
            .iter()
            .map(|c| c.kind_name())
            .chain(SINKS.iter().map(|c| c.kind_name()))
            .collect();
        assert_eq!(names, WebhookSpec::NAMES);
    }

    /// `effects` is documented as required exactly where the planner requires it.
    #[test]
    fn required_effects_match_the_table() {
        for c in SENDERS {
            let effects = kind_params(c.kind_name())
                .iter()
                .find(|p| p.name == "effects")
                .expect("every sender kind reads effects");
            assert_eq!(
                effects.default == DefaultValue::Required,
                c.needs_effects(),
                "{}",
                c.kind_name()
            );
        }
    }

    /// A YAML value for each parameter name, valid for every kind that reads it.
    fn sample(name: &str) -> &'static str {
        match name {
            "receiver" => "/r",
            "scheme" | "custom" => unreachable!("written by the caller"),
            "secret" => "whsec_dG1pbnVzLXJlZmVyZW5jZS1yZWNlaXZlci1rZXk=",
            "body" => r#"'{"id":"${var.webhook_id}"}'"#,
            "event" => "x",
            "headers" => "{ X-A: b }",
            "effects" => "{ request: { path: /c }, value: $.count }",
            "ack_within" | "over" | "wait" | "quiet" => "1s",
            "tolerance" => "300s",
            "accept_status" => "2xx",
            "reject_status" => "[401, 403]",
            "count" => "5",
            "samples" => "400",
            "floor" => "80us",
            "trigger" => "[{ method: POST, path: /t }]",
            "respond" => "[429, 200]",
            "schedule" => "[100ms, 200ms]",
            "schedule_mode" => "between",
            "max_attempts" => "3",
            "tolerance_pct" => "20",
            "tolerance_floor" => "40ms",
            "retry_after" => "1",
            "hang" => "4s",
            "max_sender_timeout" => "3s",
            "trace_json" => "$.trace_id",
            other => panic!("no sample for `{other}`"),
        }
    }

    /// One check of `kind` writing `params` (and a plain scheme).
    fn check_yaml(kind: &str, params: &[&str]) -> String {
        let mut y = format!("  - id: {}\n    kind: {kind}\n", kind.replace('.', "-"));
        for p in params
            .iter()
            .filter(|p| !matches!(**p, "scheme" | "custom"))
        {
            y.push_str(&format!("    {p}: {}\n", sample(p)));
        }
        y
    }

    fn plan_errors(checks: &str) -> Vec<String> {
        let src =
            format!("suite: s\ntarget: {{ base_url: http://127.0.0.1:1 }}\nchecks:\n{checks}");
        let path = std::path::Path::new("s.yaml");
        let file =
            crate::suite::read::parse_str(path, &src).unwrap_or_else(|d| panic!("{d}\n{src}"));
        let loaded = vec![crate::suite::read::SuiteSource {
            path: path.into(),
            source: src.clone(),
            file,
        }];
        match crate::plan::build_with_env(&loaded, &Default::default(), &|_| None) {
            Ok(_) => Vec::new(),
            Err(d) => {
                d.0.iter()
                    .map(|x| format!("{}:{} {}", x.line, x.column, x.message))
                    .collect()
            }
        }
    }

    /// Every kind plans cleanly with every parameter its row lists, and
    /// refuses, with a position, each optional one its row does not list.
    #[test]
    fn the_table_says_which_parameters_a_kind_reads() {
        let all: String = KINDS
            .iter()
            .map(|k| check_yaml(k.name, &k.params.iter().map(|p| p.name).collect::<Vec<_>>()))
            .collect();
        assert_eq!(plan_errors(&all), Vec::<String>::new());

        let sender_optional = [
            "effects",
            "ack_within",
            "tolerance",
            "accept_status",
            "reject_status",
            "count",
            "over",
        ];
        let sink_optional = [
            "event",
            "schedule",
            "schedule_mode",
            "max_attempts",
            "tolerance_pct",
            "tolerance_floor",
            "quiet",
            "retry_after",
            "hang",
            "max_sender_timeout",
            "trace_json",
        ];
        let mut refused = 0;
        for k in KINDS {
            let row: Vec<&str> = k.params.iter().map(|p| p.name).collect();
            let optional: &[&str] = if row.contains(&"receiver") {
                &sender_optional
            } else {
                &sink_optional
            };
            for extra in optional.iter().filter(|p| !row.contains(p)) {
                let mut params = row.clone();
                params.push(extra);
                let errors = plan_errors(&check_yaml(k.name, &params));
                let want = format!("`{extra}` only applies to");
                assert!(
                    errors.len() == 1 && errors[0].contains(&want) && errors[0].contains(k.name),
                    "{} with {extra}: {errors:?}",
                    k.name
                );
                assert!(
                    errors[0].starts_with(&format!("{}:", 5 + params.len() - 2)),
                    "{errors:?}"
                );
                refused += 1;
            }
        }
        assert!(refused > 60, "{refused}");
    }

    #[test]
    fn missing_effects_and_an_id_less_scheme_are_plan_errors() {
        let e = plan_errors(
            "  - id: a\n    kind: webhook.dedupes_replay\n    receiver: /r\n    secret: whsec_dG1pbnVz\n\
             \x20 - id: b\n    kind: webhook.replay_new_id\n    receiver: /r\n    scheme: stripe\n    secret: s3cr3t-value\n    effects: { request: { path: /c }, value: $.count }\n",
        );
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[0].starts_with("4:") && e[0].contains("webhook.dedupes_replay needs `effects:`"),
            "{e:?}"
        );
        assert!(
            e[1].starts_with("11:") && e[1].contains("scheme `stripe` has no id header"),
            "{e:?}"
        );
    }
}
