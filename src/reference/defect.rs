//! The catalogue of deliberate defects the reference integration can be switched into.
//!
//! The `defects!` table below has one block per family (the check family whose
//! checks are meant to catch the defect, [`DefectFamily`]) and one row per defect:
//! its variant, its kebab-case name (what `--defect NAME` and suites use) and a
//! one-line summary. Adding a defect is one row in its family's block plus its
//! behaviour behind `state.has(Defect::X)`; the compiler then points at every
//! exhaustive `match` that needs an arm, and the defect harness
//! (`tests/serial/defects.rs`) at the family table that needs a row.

use std::fmt;
use std::str::FromStr;

macro_rules! defects {
    ($(
        $family:ident => $family_name:literal {
            $( $(#[$meta:meta])* $variant:ident => $name:literal, $summary:literal; )+
        }
    )+) => {
        /// A property of the reference integration that can be broken on purpose, so
        /// tests can prove the check meant to catch it really fails.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Defect {
            $( $( $(#[$meta])* $variant, )+ )+
        }

        /// The family a defect belongs to: the checks meant to catch it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum DefectFamily {
            $( $family, )+
        }

        impl Defect {
            const ALL: &'static [Defect] = &[ $( $( Defect::$variant, )+ )+ ];

            /// The kebab-case name used on the command line and in suites.
            pub fn name(&self) -> &'static str {
                match self { $( $( Defect::$variant => $name, )+ )+ }
            }

            /// One line saying what breaks.
            pub fn summary(&self) -> &'static str {
                match self { $( $( Defect::$variant => $summary, )+ )+ }
            }

            /// The family whose checks are meant to catch it.
            pub fn family(&self) -> DefectFamily {
                match self { $( $( Defect::$variant => DefectFamily::$family, )+ )+ }
            }
        }

        impl DefectFamily {
            const ALL: &'static [DefectFamily] = &[ $( DefectFamily::$family, )+ ];

            /// Every family, in table order.
            pub fn all() -> &'static [DefectFamily] {
                Self::ALL
            }

            /// The family's name (`rate_limit`), spelled as in check kinds.
            pub fn name(&self) -> &'static str {
                match self { $( DefectFamily::$family => $family_name, )+ }
            }

            /// Its defects, in table order.
            pub fn defects(&self) -> &'static [Defect] {
                match self { $( DefectFamily::$family => &[ $( Defect::$variant, )+ ], )+ }
            }
        }
    };
}

defects! {
    Foundation => "foundation" {
        /// Auth accepts any non-empty Bearer token; the token itself becomes the tenant.
        AcceptAnyKey => "accept-any-key",
            "any non-empty Bearer token is accepted instead of 401 INVALID_API_KEY";
        /// List cursors become offsets that skip one item at every page boundary.
        BrokenPagination => "broken-pagination",
            "next_cursor is an offset that skips one item per page boundary, so walking pages loses data";
    }
    Idempotency => "idempotency" {
        /// The idempotency layer is off: keys are ignored, every request executes.
        NoIdempotency => "no-idempotency",
            "Idempotency-Key is ignored: no key required, replays and races execute again";
        /// A completed key executes the handler again instead of replaying.
        ReplayReexecutes => "replay-reexecutes",
            "a repeated Idempotency-Key runs the operation again instead of replaying the stored result";
        /// Replays lack the `Idempotent-Replayed` marker.
        ReplayWithoutMarker => "replay-without-marker",
            "replayed responses do not carry Idempotent-Replayed: 1";
        /// A key reused with a different body replays the first result instead of 422.
        MismatchReplayed => "mismatch-replayed",
            "a key reused with a different body silently replays the first result instead of 422 IDEMPOTENCY_KEY_MISMATCH";
        /// No in-flight reservation: concurrent requests with one key all execute.
        RaceExecutesTwice => "race-executes-twice",
            "a key is not reserved while its request runs, so concurrent or in-flight retries execute again instead of 409";
        /// Error responses are stored and replayed for the key.
        ErrorsCached => "errors-cached",
            "4xx/5xx answers are stored under the key, so a corrected retry with the same key replays the error";
        /// Keys are global, not per API key: another tenant gets the stored response.
        KeysGlobal => "keys-global",
            "idempotency keys are shared across API keys, so tenant B can receive tenant A's stored response";
        /// Requests are deduplicated by body hash whatever their key.
        DedupeByBody => "dedupe-by-body",
            "two different keys with an identical body are treated as one operation (deduplicated by body hash)";
        /// `"K"` (a structured-field string) and `K` are different keys.
        QuotedKeyDistinct => "quoted-key-distinct",
            "the quoted key \"K\" and the bare key K are stored as two different keys, so both execute";
        /// Empty, over-long and control-character keys are accepted as keys.
        AcceptsMalformedKeys => "accepts-malformed-keys",
            "malformed Idempotency-Key values (empty, over 255 characters, control characters) are used as keys instead of 400";
        /// The fingerprint ignores the path: another endpoint replays the stored answer.
        KeysIgnoreEndpoint => "keys-ignore-endpoint",
            "a key is not bound to its endpoint: the same key and body on another endpoint replays the first endpoint's response";
        /// Keys never expire (the TTL is ignored).
        KeysNeverExpire => "keys-never-expire",
            "idempotency keys never expire: a request after the TTL still replays the stored result";
    }
    RateLimit => "rate_limit" {
        /// No `X-RateLimit-*` / `RateLimit*` headers on any response.
        NoRateLimitHeaders => "no-rate-limit-headers",
            "responses carry no X-RateLimit-* or RateLimit/RateLimit-Policy headers";
        /// 429 without `Retry-After`.
        NoRetryAfter => "no-retry-after",
            "429 answers carry no Retry-After";
        /// Retry-After names the window end, but a key that hit the limit stays blocked one window longer.
        ShortRetryAfter => "short-retry-after",
            "Retry-After is shorter than the real block: a limited key stays limited one more window";
        /// Retry-After is the real remaining wait rounded down (`int(reset - now)`):
        /// up to 1 s short, `0` for the rest of a 1 s window.
        RetryAfterTruncated => "retry-after-truncated",
            "Retry-After is the remaining wait rounded down to whole seconds (0 late in a 1 s window): up to 1 s short";
        /// Over-limit requests beyond the first few of a window get 503 instead of 429.
        Storm5xx => "storm-5xx",
            "under a storm, over-limit requests get 503 (no Retry-After) instead of 429";
        /// Every 429 is held for 300 ms before it is sent.
        Slow429 => "slow-429",
            "429 answers are held 300 ms (the connection is kept busy) before they are sent";
        /// One bucket shared by every API key.
        GlobalBucket => "global-bucket",
            "one rate-limit bucket for every API key, so one tenant's burst limits all others";
    }
    Trace => "trace" {
        /// Error responses (status >= 400) lose their correlation headers.
        NoTraceId => "no-trace-id",
            "Trace-Id and X-Request-Id are missing on error responses (status >= 400)";
        /// A valid `traceparent` is ignored: every request starts a fresh trace.
        TraceNotPropagated => "trace-not-propagated",
            "a valid traceparent is ignored: Trace-Id is always a fresh id";
        /// `X-Request-Id` is echoed verbatim, whatever it holds.
        ReflectsRawRequestId => "reflects-raw-request-id",
            "X-Request-Id is echoed verbatim, however long or hostile";
        /// Every new trace gets the same id.
        ConstantTraceId => "constant-trace-id",
            "every response without a valid traceparent carries the same Trace-Id";
        /// An invalid `traceparent` (uppercase, zero ids, version ff, wrong lengths,
        /// extra fields) is continued instead of restarting the trace.
        AcceptsInvalidTraceparent => "accepts-invalid-traceparent",
            "an invalid traceparent's trace-id is reused instead of starting a new trace";
        /// A higher-version traceparent (`01-…-xyz`) is treated as invalid.
        RejectsFutureVersion => "rejects-future-version",
            "a higher-version traceparent (01-T-P-01-xyz) starts a new trace instead of being continued";
        /// traceresponse repeats the caller's traceparent version instead of 00.
        EchoesFutureVersion => "echoes-future-version",
            "traceresponse answers a version-01 traceparent with version 01 instead of 00";
        /// The outgoing tracestate lists the caller's members in reverse order.
        TracestateReordered => "tracestate-reordered",
            "the outgoing tracestate reverses the order of the caller's members";
        /// The outgoing tracestate is never truncated to 32 members.
        TracestateUnbounded => "tracestate-unbounded",
            "the outgoing tracestate keeps every member, beyond the 32-member limit";
        /// A scenario run's status resource carries the trace id of the request
        /// reading it, not of the request that started the run.
        AsyncStatusLosesTrace => "async-status-loses-trace",
            "GET /public/v1/scenario-runs/{id} reports the status request's own trace id instead of the one that started the run";
    }
    Webhook => "webhook" {
        /// The receiver never compares the signature (headers and timestamp still checked).
        ReceiverAcceptsForged => "receiver-accepts-forged",
            "the integrator receiver accepts any signature value";
        /// The receiver verifies over a re-serialization of the JSON body.
        ReceiverVerifiesReserialized => "receiver-verifies-reserialized",
            "the integrator receiver verifies the signature over re-serialized JSON instead of the raw bytes";
        /// The receiver ignores the timestamp entirely.
        ReceiverSkipsTimestamp => "receiver-skips-timestamp",
            "the integrator receiver accepts stale and future timestamps";
        /// The receiver checks only the past side of the tolerance.
        ReceiverAcceptsFuture => "receiver-accepts-future",
            "the integrator receiver accepts timestamps far in the future";
        /// The receiver processes every delivery, replays included.
        ReceiverNoDedupe => "receiver-no-dedupe",
            "the integrator receiver processes replays and retries again";
        /// The receiver dedupes on id + signature, so a sender retry is processed twice.
        ReceiverDedupesOnSignature => "receiver-dedupes-on-signature",
            "the integrator receiver dedupes on id+signature, so retries with a new timestamp are processed again";
        /// The receiver dedupes on the delivery id header alone, which GitHub-style
        /// schemes do not sign, so a captured delivery re-sent under a new id is processed again.
        ReceiverDedupesByDeliveryId => "receiver-dedupes-by-delivery-id",
            "the integrator receiver dedupes only on the delivery id header, so a GitHub-style delivery (unsigned X-GitHub-Delivery) re-sent under a new id is processed again";
        /// A delivery without a signature header is accepted unverified (the
        /// signature is only checked when present).
        ReceiverSignatureOptional => "receiver-signature-optional",
            "the integrator receiver only verifies a signature that is present, so a delivery without the signature header is accepted and processed";
        /// The receiver acknowledges after 2.5 s.
        ReceiverSlowAck => "receiver-slow-ack",
            "the integrator receiver takes 2.5 s to acknowledge";
        /// The receiver only looks at the first signature of a rotation list.
        ReceiverFirstSignatureOnly => "receiver-first-signature-only",
            "the integrator receiver compares only the first of several signatures (breaks key rotation)";
        /// The receiver accepts delivery ids containing `.`.
        ReceiverAcceptsDottedId => "receiver-accepts-dotted-id",
            "the integrator receiver accepts webhook-ids containing `.` (ambiguous in `id.ts.body`)";
        /// Outgoing deliveries carry no signature.
        SenderUnsigned => "sender-unsigned",
            "outgoing webhook deliveries carry no X-Botix-Signature";
        /// Each retry gets a fresh X-Botix-Request-Id.
        SenderNewRequestIdPerRetry => "sender-new-request-id-per-retry",
            "outgoing webhook retries carry a new X-Botix-Request-Id each time";
        /// Retries come every 10 ms instead of on the schedule.
        SenderIgnoresSchedule => "sender-ignores-schedule",
            "outgoing webhook retries ignore the schedule (every 10 ms)";
        /// The delivery carries a fresh trace id instead of the caller's.
        SenderDropsTrace => "sender-drops-trace",
            "outgoing webhook deliveries start a new trace instead of carrying the caller's trace-id";
        /// One more attempt after a 2xx.
        SenderRetriesAfter2xx => "sender-retries-after-2xx",
            "outgoing webhooks are delivered once more after a 2xx";
        /// Retry-After on a 429/503 answer is ignored.
        SenderIgnoresRetryAfter => "sender-ignores-retry-after",
            "outgoing webhook retries ignore Retry-After on 429/503 answers";
        /// A hanging receiver holds a delivery attempt for a minute.
        SenderNoTimeout => "sender-no-timeout",
            "outgoing webhook attempts wait 60 s on a receiver that does not answer";
        /// 410 Gone is retried like a 5xx.
        SenderRetriesGone => "sender-retries-gone",
            "outgoing webhooks keep retrying an endpoint that answered 410 Gone";
        /// The receiver compares signatures byte by byte with an early exit and
        /// 20 µs of work per matching byte (a plain `==` leaks nanoseconds, too
        /// few to see over a network; this makes the leak measurable, ~840 µs
        /// over the 42 matching base64 characters, well above the suite's
        /// 250 µs floor even with four suites running at once).
        ReceiverLeakyCompare => "receiver-leaky-compare",
            "the integrator receiver compares signatures byte by byte, stopping at the first difference, with 20 µs of work per matching byte, so a forgery's rejection time tells how much of it is right";
        /// The receiver looks its headers up by their exact spelling.
        ReceiverCaseSensitiveHeaders => "receiver-case-sensitive-headers",
            "the integrator receiver finds its webhook-* headers only when spelled in lower case, as the Standard Webhooks documentation writes them (a case-sensitive lookup of the raw names)";
    }
    Client => "client" {
        /// Client: waits its own backoff and ignores Retry-After's value.
        ClientIgnoresRetryAfter => "client-ignores-retry-after",
            "client: retries after its own short backoff, ignoring the value of Retry-After";
        /// Client: waits exactly the computed delay, no random part.
        ClientNoJitter => "client-no-jitter",
            "client: waits exactly Retry-After or base*2^n, no jitter, so a herd retries in lockstep";
        /// Client: no attempt limit and no maximum wait.
        ClientUnbounded => "client-unbounded",
            "client: retries forever and waits any Retry-After, however long";
        /// Client: retries 400/401/403/404/422 like 429.
        ClientRetries4xx => "client-retries-4xx",
            "client: retries 400, 401, 403, 404 and 422 instead of giving up";
        /// Client: a fresh Idempotency-Key on every attempt.
        ClientNewKeyPerAttempt => "client-new-key-per-attempt",
            "client: sends a new Idempotency-Key on every retry (a duplicate-charge risk)";
        /// Client: one Idempotency-Key for every operation.
        ClientOneKeyForAll => "client-one-key-for-all",
            "client: reuses the first operation's Idempotency-Key for every later operation (a server replays them instead of performing them)";
        /// Client: no Idempotency-Key at all.
        ClientNoKey => "client-no-key",
            "client: sends POSTs without an Idempotency-Key";
        /// Client: a constant delay between attempts.
        ClientFixedBackoff => "client-fixed-backoff",
            "client: without Retry-After, retries at a constant interval (the base delay) instead of a growing one";
        /// Client: retries a 503 that has no Retry-After.
        ClientRetries503Blindly => "client-retries-503-blindly",
            "client: retries 503 even without Retry-After";
        /// Client: ignores X-RateLimit-Remaining until it meets a 429.
        ClientIgnoresRemaining => "client-ignores-remaining",
            "client: keeps its pace when X-RateLimit-Remaining is low instead of slowing down";
        /// Client: a second (inner) retry layer re-sends a retryable 503 at once.
        ClientRetryStorm => "client-retry-storm",
            "client: an inner retry layer re-sends every retryable 503 three times at once, before the outer layer's Retry-After wait";
        /// Client: a replayed 2xx (Idempotent-Replayed) is taken as a failure.
        ClientRejectsReplay => "client-rejects-replay",
            "client: treats a replayed 2xx (Idempotent-Replayed: 1) as an error and sends the operation again under a new key";
        /// Client: parses Retry-After as an integer only and crashes on the HTTP-date form.
        ClientCrashesOnHttpDate => "client-crashes-on-http-date",
            "client: reads Retry-After as delay-seconds only and crashes (exit 101) on the HTTP-date form";
        /// Client: each retry starts a new trace.
        ClientNewTracePerRetry => "client-new-trace-per-retry",
            "client: every retry of an operation carries a new trace-id in its traceparent instead of the operation's one";
        /// Client: no traceparent at all.
        ClientNoTraceparent => "client-no-traceparent",
            "client: sends no traceparent, so the platform cannot join its requests (or their retries) to the caller's trace";
        /// Client (`--poll`): an empty cursor read as "start again".
        ClientPollsPastEnd => "client-polls-past-end",
            "client: with --poll, after the page whose next_cursor is null it asks the list once more with an empty cursor instead of stopping";
    }
    Transport => "transport" {
        /// The server certificate expires within a week (`--tls`).
        ExpiringCertificate => "expiring-certificate",
            "over --tls, the server certificate expires in 7 days, under the 14 days transport.certificate asks for";
        /// Still speaks TLS 1.0 and 1.1 (`--tls`): a legacy ClientHello is
        /// answered with a ServerHello for its version.
        AcceptsTls10 => "accepts-tls10",
            "over --tls, a TLS 1.0 or 1.1 ClientHello is answered with a ServerHello for that version instead of a protocol_version alert";
        /// No Strict-Transport-Security on https responses.
        NoHsts => "no-hsts",
            "over --tls, responses carry no Strict-Transport-Security header";
        /// CORS reflects any Origin, with credentials allowed.
        CorsReflectsOrigin => "cors-reflects-origin",
            "any Origin is reflected in Access-Control-Allow-Origin with Access-Control-Allow-Credentials: true";
        /// Client certificates are checked when shown but not required.
        ClientCertsOptional => "client-certs-optional",
            "over --tls --tls-client-certs, a client that shows no certificate is let in";
        /// Plain http on the TLS port is served by the API.
        ServesPlainHttp => "serves-plain-http",
            "over --tls, a plain-http request on the https port is answered by the API instead of a 301 to https";
    }
    Contract => "contract" {
        /// `POST /public/v1/messages` answers `contactId` instead of `contact_id`.
        FieldRenamed => "field-renamed",
            "a created message's `contact_id` is answered as `contactId`, which the OpenAPI document does not describe";
        /// `GET /public/v1/messages/count` answers 500, a status it does not document.
        Undocumented500 => "undocumented-500",
            "GET /public/v1/messages/count answers 500 INTERNAL, a status the OpenAPI document does not list";
        /// 401 answers lack the `WWW-Authenticate` header the document requires.
        NoWwwAuthenticate => "no-www-authenticate",
            "401 INVALID_API_KEY answers lack the WWW-Authenticate header the OpenAPI document declares required";
        /// 401 answers name the Basic scheme, which the document does not allow.
        WwwAuthenticateBasic => "www-authenticate-basic",
            "401 INVALID_API_KEY answers carry WWW-Authenticate: Basic realm=\"reference\", not the Bearer scheme the OpenAPI document's header schema allows";
        /// The deprecated `GET /public/v1/messages/total` answers without `Deprecation` and `Sunset`.
        NoDeprecationHeader => "no-deprecation-header",
            "GET /public/v1/messages/total, deprecated in the OpenAPI document with an x-sunset date, answers without the Deprecation and Sunset headers";
        /// The deprecated operation sends the drafts' `Deprecation: true`.
        DeprecationDraftSyntax => "deprecation-draft-syntax",
            "GET /public/v1/messages/total answers Deprecation: true (an earlier draft's form), not the RFC 9745 date @1767225600";
        /// `message.created` deliveries lack `created_at`, which the document's event schema requires.
        WebhookMissingField => "webhook-missing-field",
            "message.created deliveries lack `created_at`, a required field of the OpenAPI document's webhooks entry (the event log keeps it)";
        /// The deprecated operation's Sunset is an RFC 3339 timestamp, not an HTTP-date.
        SunsetIsoDate => "sunset-iso-date",
            "GET /public/v1/messages/total answers Sunset: 2027-06-30T23:59:59Z, not the HTTP-date RFC 8594 asks for";
    }
    Load => "load" {
        /// Every Nth API request (`ReferenceConfig.stall_every`) pauses the API for `stall_for`.
        Stall => "stall",
            "every Nth API request pauses the whole API (default every 200th, for 1 s; requests arriving meanwhile wait), so latency tails and coordinated omission show";
        /// Every API request leaves its worker counted in use (a pool that leaks).
        PoolLeak => "pool-leak",
            "every API request leaks its pool slot: /metrics' tminus_reference_pool_in_use grows with each request and never comes back down (answers stay fast)";
        /// Outgoing webhooks leave through one queue, 10 a second.
        WebhookLagUnderLoad => "webhook-lag-under-load",
            "outgoing webhooks leave through one queue at 10 a second: one by one they are on time, under a burst they fall seconds behind (LOAD-006)";
    }
    Polling => "polling" {
        /// List cursors count the rows left from the newest end, so a row
        /// inserted during a walk skips an old one.
        OffsetCursor => "offset-cursor",
            "next_cursor is an offset counted from the newest end: each row inserted during a walk skips one old row";
        /// The first page's cursor leads to the second page twice.
        RepeatingCursor => "repeating-cursor",
            "the first page's next_cursor serves the second page, whose next_cursor serves it again (a repeated page)";
        /// The last page still hands out a cursor, to an empty page that hands it out again.
        EndlessCursor => "endless-cursor",
            "the last page's next_cursor is not null: it leads to an empty page whose next_cursor is the same again, so a walk never ends";
        /// An event whose every delivery attempt failed is dropped from `GET /public/v1/events`.
        DropsLostEvents => "drops-lost-events",
            "an event whose webhook delivery failed on every attempt is removed from GET /public/v1/events after the last retry";
    }
    Dependency => "dependency" {
        /// The provider is called with 2 s per try and 3 tries, no deadline.
        DependencySlowTimeout => "dependency-slow-timeout",
            "POST /public/v1/payments calls its provider with a 2 s timeout and 3 tries (6 s and more when it hangs), far past its 1 s SLO";
        /// Six tries back to back, Retry-After ignored.
        DependencyRetryStorm => "dependency-retry-storm",
            "a failing provider call is retried 5 times at once, without backoff, ignoring the provider's Retry-After";
        /// The breaker never opens.
        BreakerMissing => "breaker-missing",
            "no circuit breaker: a failing provider keeps receiving every payment and its retries";
        /// Half-open lets every request through until one succeeds.
        BreakerHalfOpenHerd => "breaker-half-open-herd",
            "the half-open breaker lets every payment through to the failing provider instead of one probe at a time";
        /// The breaker closes when its wait ends, without a probe.
        BreakerFlaps => "breaker-flaps",
            "the breaker closes again when its wait ends, without a probe, so a steady provider failure opens and closes it over and over";
        /// A full provider pool queues instead of answering 503 at once.
        QueuesInsteadOfShedding => "queues-instead-of-shedding",
            "when the provider pool is full, payments wait in a queue instead of being answered 503 + Retry-After at once";
        /// Payments are answered from a cache; the provider is never called.
        DependencyCached => "dependency-cached",
            "payments are answered 201 from a cache without ever calling the provider, so nothing about the dependency can be judged";
    }
    Auth => "auth" {
        /// The production twin accepts the sandbox's API keys as its own.
        SandboxKeyWorksInProduction => "sandbox-key-works-in-production",
            "production (`--environment production`) accepts the sandbox's API keys, so a sandbox credential reads and writes production data";
    }
    Observability => "observability" {
        /// Log lines carry no `trace_id` field.
        LogsWithoutTraceId => "logs-without-trace-id",
            "the JSON request log lines carry the request id but no trace_id, so a partner's trace id finds nothing in the logs";
        /// The Authorization header is logged.
        LogsSecrets => "logs-secrets",
            "every request log line holds the request's Authorization header (the API key) as it came";
        /// A payment's card number is logged.
        LogsPii => "logs-pii",
            "the request log line of POST /public/v1/payments holds the card number of its body (`card.number` or `card_number`)";
        /// One route is left out of the RED series.
        RedMissingRoute => "red-missing-route",
            "GET /public/v1/contacts is left out of /metrics' per-route RED series (http_requests_total, http_request_duration_seconds)";
    }
}

impl Defect {
    /// Every defect, in table order.
    pub fn all() -> &'static [Defect] {
        Self::ALL
    }
}

impl fmt::Display for DefectFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Defect {
    type Err = String;

    /// Parses a kebab-case name. The error lists every valid name and, for a near
    /// miss (edit distance under 3), suggests the intended one.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(d) = Self::all().iter().find(|d| d.name() == s) {
            return Ok(*d);
        }
        let valid: Vec<&str> = Self::all().iter().map(|d| d.name()).collect();
        let suggestion = valid
            .iter()
            .map(|v| (strsim::levenshtein(s, v), *v))
            .filter(|(dist, _)| *dist < 3)
            .min()
            .map(|(_, v)| format!(" (did you mean `{v}`?)"))
            .unwrap_or_default();
        Err(format!(
            "unknown defect `{s}`{suggestion}; valid defects: {}",
            valid.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for d in Defect::all() {
            assert!(seen.insert(d.name()), "duplicate name {}", d.name());
            assert_eq!(d.name().parse::<Defect>().unwrap(), *d);
            assert!(!d.summary().is_empty());
        }
    }

    #[test]
    fn families_partition_the_defects_in_table_order() {
        let grouped: Vec<Defect> = DefectFamily::all()
            .iter()
            .flat_map(|f| {
                assert!(!f.defects().is_empty(), "{f} has no defect");
                f.defects()
                    .iter()
                    .inspect(move |d| assert_eq!(d.family(), *f))
            })
            .copied()
            .collect();
        assert_eq!(grouped, Defect::all());
    }

    #[test]
    fn unknown_name_lists_valid_ones_and_suggests() {
        let err = "accept-any-kye".parse::<Defect>().unwrap_err();
        assert!(err.contains("did you mean `accept-any-key`"), "{err}");
        assert!(err.contains("broken-pagination"), "{err}");
    }
}
