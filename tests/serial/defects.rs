//! The defect harness: every family's table of reference defects and the checks
//! they must make fail or skip, run by one function (`common::harness::run_table`),
//! plus the coverage proofs: every defect of the reference has exactly one row home
//! (its family's table), and every check kind is failed by at least one row.
//!
//! A row is `row(defects, [(failing check, substring of its failure message)],
//! [skipped checks])`; every other check of the suite must pass, and each table
//! also runs its suite against the healthy reference (everything passes).

use crate::common;

use std::collections::BTreeSet;

use common::harness::{defect_tables, failed_kinds, row, run_table, Runner, Table};
use tminus::reference::{Defect, DefectFamily};

use Defect::*;

const LAUNCH_CHECKLIST: &str = "suites/launch-checklist.yaml";

/// API basics, judged by the launch checklist's `steps` checks.
static FOUNDATION: Table = Table {
    family: DefectFamily::Foundation,
    suite: LAUNCH_CHECKLIST,
    runner: Runner::Reference,
    width: 3,
    rows: &[
        row(
            &[AcceptAnyKey],
            &[("auth-rejects-bad-key", "status: expected 401, got 200")],
            &[],
        ),
        row(
            &[BrokenPagination],
            &[(
                "pagination-walks-cursor",
                "$.data[0].id: expected \"2\", got missing",
            )],
            &[],
        ),
    ],
};

static IDEMPOTENCY: Table = Table {
    family: DefectFamily::Idempotency,
    suite: "suites/idempotency.yaml",
    runner: Runner::Reference,
    width: 4,
    rows: &[
        row(
            &[NoIdempotency],
            &[
                // Without --strict the message names the broken MUSTs (the
                // keyless 201 is `answer`, a SHOULD: a warning there).
                (
                    "idem-missing-key",
                    "a request without a key: the side-effect counter",
                ),
                (
                    "idem-replay",
                    "two requests with one key: the side-effect counter",
                ),
                (
                    "idem-mismatch",
                    "the same key with a different body executed it",
                ),
                (
                    "idem-concurrent",
                    "10 parallel requests with one key: the side-effect counter",
                ),
                (
                    "idem-in-flight",
                    "a slow request, a retry during it and one after: the side-effect counter",
                ),
                (
                    "idem-lost-response",
                    "a lost response and its retry: the side-effect counter",
                ),
                (
                    "idem-key-syntax",
                    "a malformed Idempotency-Key (empty) got 201",
                ),
                ("idem-expiry", "the key did not replay"),
            ],
            &[],
        ),
        // Key syntax and expiry judge replays too (quoted = bare, before the TTL).
        row(
            &[ReplayReexecutes],
            &[
                (
                    "idem-replay",
                    "two requests with one key: the side-effect counter",
                ),
                (
                    "idem-in-flight",
                    "a slow request, a retry during it and one after: the side-effect counter",
                ),
                (
                    "idem-lost-response",
                    "a lost response and its retry: the side-effect counter",
                ),
                (
                    "idem-key-syntax",
                    "the quoted key \"K\" and the bare key K are two different keys",
                ),
                ("idem-expiry", "the key did not replay"),
            ],
            &[],
        ),
        row(
            &[ReplayWithoutMarker],
            &[("idem-replay", "carries no Idempotent-Replayed header")],
            &[],
        ),
        // Another endpoint is a different fingerprint: replayed as well.
        row(
            &[MismatchReplayed],
            &[
                (
                    "idem-mismatch",
                    "the same key with a different body silently replayed the first result",
                ),
                (
                    "idem-endpoint-scope",
                    "received endpoint A's stored response",
                ),
            ],
            &[],
        ),
        row(
            &[RaceExecutesTwice],
            &[
                (
                    "idem-concurrent",
                    "10 parallel requests with one key: the side-effect counter",
                ),
                (
                    "idem-in-flight",
                    "a slow request, a retry during it and one after: the side-effect counter",
                ),
                (
                    "idem-lost-response",
                    "a lost response and its retry: the side-effect counter",
                ),
            ],
            &[],
        ),
        row(
            &[ErrorsCached],
            &[("idem-errors-not-cached", "the error was cached")],
            &[],
        ),
        row(
            &[KeysGlobal],
            &[(
                "idem-key-scope",
                "API key B received API key A's stored response",
            )],
            &[],
        ),
        row(
            // The replay's control: the same body under a new key is replayed.
            &[DedupeByBody],
            &[
                ("idem-distinct-keys", "(deduplicated by body)"),
                (
                    "idem-replay",
                    "the target de-duplicates by content, so the replay with the first key proves nothing",
                ),
            ],
            &[],
        ),
        row(
            &[QuotedKeyDistinct],
            &[(
                "idem-key-syntax",
                "the quoted key \"K\" and the bare key K are two different keys",
            )],
            &[],
        ),
        row(
            &[AcceptsMalformedKeys],
            &[(
                "idem-key-syntax",
                "a malformed Idempotency-Key (256 characters) got 201",
            )],
            &[],
        ),
        row(
            &[KeysIgnoreEndpoint],
            &[(
                "idem-endpoint-scope",
                "received endpoint A's stored response",
            )],
            &[],
        ),
        row(
            &[KeysNeverExpire],
            &[("idem-expiry", "the key did not expire")],
            &[],
        ),
    ],
};

static RATE_LIMIT: Table = Table {
    family: DefectFamily::RateLimit,
    suite: "suites/rate-limit.yaml",
    runner: Runner::Reference,
    // All at once: the suite mostly waits for windows to reset.
    width: 7,
    rows: &[
        row(
            &[NoRateLimitHeaders],
            &[("rl-headers", "no rate-limit headers")],
            &[],
        ),
        row(
            &[NoRetryAfter],
            &[("rl-storm", "no Retry-After header")],
            &[],
        ),
        row(
            &[ShortRetryAfter],
            &[("rl-recovery", "still limited after Retry-After")],
            &[],
        ),
        row(
            &[RetryAfterTruncated],
            &[("rl-recovery", "the header understates the wait")],
            &[],
        ),
        row(&[Storm5xx], &[("rl-storm", "5xx under the storm")], &[]),
        row(&[Slow429], &[("rl-storm", "limited answers are slow")], &[]),
        row(
            &[GlobalBucket],
            &[("rl-partition", "tenant B is limited because tenant A was")],
            &[],
        ),
    ],
};

static TRACE: Table = Table {
    family: DefectFamily::Trace,
    suite: "suites/trace.yaml",
    runner: Runner::Reference,
    width: 4,
    rows: &[
        row(
            &[NoTraceId],
            &[(
                "trace-id-on-every-response",
                "5 of 6 responses carry none of Trace-Id",
            )],
            &[],
        ),
        // The launch checklist's 401 step expects a trace id too.
        row(
            &[NoTraceId],
            &[
                (
                    "auth-rejects-bad-key",
                    "header Trace-Id: expected present, got absent",
                ),
                (
                    "trace-id-on-every-response",
                    "3 of 4 responses carry none of Trace-Id",
                ),
            ],
            &[],
        )
        .on(LAUNCH_CHECKLIST),
        row(
            &[ConstantTraceId],
            &[(
                "trace-ids-unique",
                "4bf92f3577b34da6a3ce929d0e0e4736 appeared",
            )],
            &[],
        ),
        // Ignoring every traceparent also ignores a higher-version one, and a
        // restarted trace drops tracestate (nothing left to judge).
        row(
            &[TraceNotPropagated],
            &[
                ("traceparent-propagated", "carries trace-id"),
                ("traceparent-version-downgrade", "(a new trace)"),
            ],
            &["tracestate-mutation"],
        ),
        row(
            &[AcceptsInvalidTraceparent],
            &[(
                "invalid-traceparent-ignored",
                "6 of 8 invalid traceparents were not ignored",
            )],
            &[],
        ),
        row(
            &[ReflectsRawRequestId],
            &[("request-id-hygiene", "overlong X-Request-Id (tminus-")],
            &[],
        ),
        row(
            &[RejectsFutureVersion],
            &[("traceparent-version-downgrade", "(a new trace)")],
            &[],
        ),
        row(
            &[EchoesFutureVersion],
            &[(
                "traceparent-version-downgrade",
                "has version 01 instead of 00",
            )],
            &[],
        ),
        row(
            &[TracestateReordered],
            &[("tracestate-mutation", "3 members: member order changed")],
            &[],
        ),
        row(
            &[TracestateUnbounded],
            &[("tracestate-mutation", "34 members, more than 32")],
            &[],
        ),
        row(
            &[AsyncStatusLosesTrace],
            &[(
                "async-status-trace-id",
                "but the status URL /public/v1/scenario-runs/run_",
            )],
            &[],
        ),
    ],
};

static WEBHOOK: Table = Table {
    family: DefectFamily::Webhook,
    suite: "suites/webhooks.yaml",
    runner: Runner::Reference,
    // Runs are mostly waiting on sockets and timers, so a few at a time.
    width: 4,
    rows: &[
        row(
            &[ReceiverAcceptsForged],
            &[
                ("wh-rejects-forged", "forged signature was not rejected"),
                (
                    "wh-rejects-tampered",
                    "body changed by one byte after signing was not rejected",
                ),
                (
                    "wh-rejects-reserialized",
                    "re-serialized JSON with the original signature was not rejected",
                ),
                ("wh-rejects-truncated", "half the signature"),
                (
                    "wh-rejects-wrong-scheme",
                    "wrong scheme `v1a,<valid digest>` was not rejected",
                ),
            ],
            &[],
        )
        // A receiver that accepts forgeries is not timed: inconclusive.
        .erring(&[(
            "wh-constant-time-compare",
            "the receiver accepted a forged signature",
        )]),
        row(
            &[ReceiverVerifiesReserialized],
            &[
                (
                    "wh-accepts-raw-bytes",
                    "non-canonical JSON signed over its raw bytes was not accepted",
                ),
                (
                    "wh-rejects-reserialized",
                    "re-serialized JSON with the original signature was not rejected",
                ),
            ],
            &[],
        ),
        row(
            &[ReceiverSkipsTimestamp],
            &[
                (
                    "wh-rejects-stale",
                    "timestamp 360 s in the past was not rejected",
                ),
                (
                    "wh-rejects-future",
                    "timestamp 360 s in the future was not rejected",
                ),
            ],
            &[],
        ),
        row(
            &[ReceiverAcceptsFuture],
            &[(
                "wh-rejects-future",
                "timestamp 360 s in the future was not rejected",
            )],
            &[],
        ),
        row(
            &[ReceiverNoDedupe],
            &[
                ("wh-dedupes-replay", "processed 2 time(s), expected 1"),
                ("wh-dedupes-retry", "processed 2 time(s), expected 1"),
                ("wh-replay-new-id", "processed 2 time(s), expected 1"),
            ],
            &[],
        ),
        row(
            &[ReceiverDedupesOnSignature],
            &[("wh-dedupes-retry", "processed 2 time(s), expected 1")],
            &[],
        ),
        row(
            &[ReceiverSignatureOptional],
            &[(
                "wh-rejects-missing-headers",
                "without webhook-signature was not rejected: answered 200",
            )],
            &[],
        ),
        row(
            &[ReceiverDedupesByDeliveryId],
            &[(
                "wh-replay-new-id",
                "does not sign X-GitHub-Delivery, so dedupe must not rest on it alone",
            )],
            &[],
        ),
        row(
            &[ReceiverSlowAck],
            &[
                ("wh-accepts-valid", "over the 2.0 s limit"),
                ("wh-burst-ack", "over the 2.0 s limit for 40 deliveries"),
            ],
            &[],
        ),
        row(
            &[ReceiverFirstSignatureOnly],
            &[(
                "wh-key-rotation",
                "two signatures, old key first was not accepted",
            )],
            &[],
        ),
        row(
            &[ReceiverAcceptsDottedId],
            // `rejected` is a SHOULD here (a receiver-side guard): the MUST
            // that fails without --strict is the side effect.
            &[(
                "wh-rejects-dotted-id",
                "rejected deliveries still had a side effect",
            )],
            &[],
        ),
        row(
            &[SenderUnsigned],
            &[("whs-delivery-signed", "missing header X-Botix-Signature")],
            &[],
        ),
        row(
            &[SenderNewRequestIdPerRetry],
            &[(
                "whs-retries-on-schedule",
                "retries changed X-Botix-Request-Id",
            )],
            &[],
        ),
        row(
            &[SenderIgnoresSchedule],
            &[("whs-retries-on-schedule", "the schedule says 100 ms")],
            &[],
        ),
        row(
            &[SenderDropsTrace],
            &[("trc-webhook-trace-join", "the delivery's traceparent holds")],
            &[],
        ),
        row(
            &[SenderRetriesAfter2xx],
            &[(
                "whs-stops-after-success",
                "1 attempt(s) after tminus answered 200",
            )],
            &[],
        ),
        row(
            &[SenderRetriesGone],
            &[("whs-stops-on-gone", "after tminus answered 410")],
            &[],
        ),
        row(
            &[SenderIgnoresRetryAfter],
            &[(
                "whs-respects-retry-after",
                "after a 429 with Retry-After: 1",
            )],
            &[],
        ),
        row(
            &[SenderNoTimeout],
            &[(
                "whs-times-out-hanging-receiver",
                "the sender still held attempt 1 open",
            )],
            &[],
        ),
        // WH-011 (issue 41): only the delivery in lower case is accepted.
        row(
            &[ReceiverCaseSensitiveHeaders],
            &[(
                "wh-header-case",
                "acknowledged: a valid delivery with its header names in UPPER CASE was not accepted: answered 401",
            )],
            &[],
        ),
        // WH-013: 20 µs per matching byte, so the all-but-last group is
        // ~840 µs slower (42 base64 characters), far above the 250 µs floor.
        row(
            &[ReceiverLeakyCompare],
            &[(
                "wh-constant-time-compare",
                "were rejected more slowly than ones sharing no prefix",
            )],
            &[],
        ),
    ],
};

static CLIENT: Table = Table {
    family: DefectFamily::Client,
    suite: "suites/client-certification.yaml",
    runner: Runner::ClientEnv,
    // Three suite runs at a time: the jitter check alone starts 50 clients.
    width: 3,
    rows: &[
        // RETRY-004 too: it retries long before a huge Retry-After instead of giving up.
        row(
            &[ClientIgnoresRetryAfter],
            &[
                ("respects-retry-after", "after a Retry-After of 2 s"),
                (
                    "respects-retry-after-date",
                    "after a Retry-After of 3 s (HTTP-date)",
                ),
                // Its backoff does not wait out the Retry-After 1 between attempts.
                ("bounded", "paced: the client retried"),
                (
                    "bounded-huge-retry-after",
                    "the client does not stop retrying in bounds",
                ),
            ],
            &[],
        ),
        row(
            &[ClientNoJitter],
            &[("jitter", "the clients retry together (thundering herd)")],
            &[],
        ),
        row(
            &[ClientUnbounded],
            &[
                ("bounded", "the client does not stop retrying in bounds"),
                (
                    "bounded-huge-retry-after",
                    "the client does not stop retrying in bounds",
                ),
            ],
            &[],
        ),
        row(
            &[ClientRetries4xx],
            &[(
                "no-retry-on-4xx",
                "the client retried a request the platform refused for good",
            )],
            &[],
        ),
        row(
            &[ClientNewKeyPerAttempt],
            &[("idempotency-keys", "a retry used a new key")],
            &[],
        ),
        row(
            &[ClientOneKeyForAll],
            &[("idempotency-keys", "share the key")],
            &[],
        ),
        row(
            &[ClientNoKey],
            &[(
                "idempotency-keys",
                "mutating requests have no Idempotency-Key",
            )],
            &[],
        ),
        row(
            &[ClientFixedBackoff],
            &[(
                "exponential-backoff",
                "the gaps between attempts do not grow",
            )],
            &[],
        ),
        row(
            &[ClientRetries503Blindly],
            &[("retry-503-policy", "503 without Retry-After: retried")],
            &[],
        ),
        row(
            &[ClientIgnoresRemaining],
            &[
                (
                    "slows-before-limit",
                    "the client spent past X-RateLimit-Remaining",
                ),
                // Its polling loop too (POLL-003 is RETRY-006 for a poller).
                (
                    "client-polling",
                    "paces_to_remaining: the polling loop spent past X-RateLimit-Remaining",
                ),
            ],
            &[],
        ),
        row(
            &[ClientPollsPastEnd],
            &[(
                "client-polling",
                "stops_at_end: 1 request(s) after the page whose next_cursor is null",
            )],
            &[],
        ),
        row(
            &[ClientRetryStorm],
            &[("retry-amplification", "retry amplification")],
            &[],
        ),
        // Issue 22 case 6: a crash on the date form is a verdict, not "not
        // exercised"; the seconds-form control run shows it retries at all.
        row(
            &[ClientCrashesOnHttpDate],
            &[(
                "respects-retry-after-date",
                "does not understand the HTTP-date form of Retry-After",
            )],
            &[],
        ),
        row(
            &[ClientRejectsReplay],
            &[(
                "replay-is-success",
                "the operation was sent again under a new key",
            )],
            &[],
        ),
        // TRC-C01 (issue 41): `retries_share_trace` rests on `valid`.
        row(
            &[ClientNoTraceparent],
            &[(
                "client-traceparent",
                "valid: 3 of 3 attempt(s) without a valid traceparent: #1 has no traceparent",
            )],
            &[],
        ),
        row(
            &[ClientNewTracePerRetry],
            &[(
                "client-traceparent",
                "retries_share_trace: attempts #1, #2, #3 of one operation carry trace-ids",
            )],
            &[],
        ),
    ],
};

/// The raw median hides the stall (an API-wide pause: most requests never
/// meet one); the corrected p99 shows the slots that waited on the full pool
/// behind it, charged because the target's own latency rose (issue 23).
static LOAD: Table = Table {
    family: DefectFamily::Load,
    suite: "tests/suites/stall.yaml",
    runner: Runner::Reference,
    width: 1,
    rows: &[
        row(
            &[Stall],
            &[("stall.p99", "threshold breached: p99 < 500ms")],
            &[],
        ),
        // LOAD-003 on the shipped burst: answers as fast as ever, only the
        // pool's own gauge (read from /metrics) shows the leak.
        row(
            &[PoolLeak],
            &[(
                "burst.observe.after_pool_in_use",
                "threshold breached: after(pool_in_use) < 1",
            )],
            &[],
        )
        .on("suites/burst.yaml"),
        // LOAD-006 on the shipped burst: one by one each event is on time;
        // the burst's fall seconds behind, past the wait.
        row(
            &[WebhookLagUnderLoad],
            &[("burst.webhooks", "never reached the sink within")],
            &[],
        )
        .on("suites/burst.yaml"),
        // DEP-005: the same pauses put the capacity below a declared floor.
        row(&[Stall], &[("floor", "below the declared 40.0/s")], &[])
            .on("tests/suites/capacity-floor.yaml"),
    ],
};

/// Transport security (issue 25 item 4), over https: each defect fails only
/// the property it breaks. `accepts-tls10` fails both legacy versions (the
/// reference answers any legacy ClientHello).
static TRANSPORT: Table = Table {
    family: DefectFamily::Transport,
    suite: "suites/transport.yaml",
    runner: Runner::ReferenceTls {
        client_certs: false,
    },
    width: 3,
    rows: &[
        row(
            &[ExpiringCertificate],
            &[("tls-certificate", "not_expiring: `CN=127.0.0.1` expires in")],
            &[],
        ),
        row(
            &[AcceptsTls10],
            &[("tls-versions", "with a ServerHello for TLS 1.0")],
            &[],
        ),
        row(
            &[NoHsts],
            &[("hsts", "carries no Strict-Transport-Security")],
            &[],
        ),
        row(
            &[CorsReflectsOrigin],
            &[(
                "cors-narrow",
                "no_credentialed_reflection: any site can read a signed-in user's answers",
            )],
            &[],
        ),
        row(
            &[ServesPlainHttp],
            &[("https-redirect", "not_served: GET http://127.0.0.1:")],
            &[],
        ),
    ],
};

/// `transport.mtls_required` against the reference requiring client
/// certificates (its own table: the runner gives tminus the certificate).
static TRANSPORT_MTLS: Table = Table {
    family: DefectFamily::Transport,
    suite: "suites/transport-mtls.yaml",
    runner: Runner::ReferenceTls { client_certs: true },
    width: 1,
    rows: &[row(
        &[ClientCertsOptional],
        &[(
            "mtls",
            "refused_without: GET /public/v1/messages/count without a client certificate was answered 200",
        )],
        &[],
    )],
};

/// Contract drift (issue 26): the suite judges every response against the
/// reference's OpenAPI document; each defect fails only the `contract`
/// property of the check that saw the drifted answer (the check's own
/// properties still hold, so the message names only `contract`).
static CONTRACT: Table = Table {
    family: DefectFamily::Contract,
    suite: "suites/contract.yaml",
    runner: Runner::Reference,
    width: 3,
    rows: &[
        // The sink check's trigger creates a message too: its answer drifts.
        row(
            &[FieldRenamed],
            &[
                (
                    "message-replay",
                    "contract: createMessage (POST /public/v1/messages): 201 body: \"contact_id\" is a required property at #",
                ),
                (
                    "message-event-documented",
                    "contract: createMessage (POST /public/v1/messages): 201 body: \"contact_id\" is a required property at #",
                ),
            ],
            &[],
        ),
        row(
            &[Undocumented500],
            &[(
                "count-ids-unique",
                "contract: countMessages (GET /public/v1/messages/count): status 500 is not documented",
            )],
            &[],
        ),
        row(
            &[NoWwwAuthenticate],
            &[(
                "bad-key-rejected",
                "contract: listContacts (GET /public/v1/contacts): 401 response lacks the required header WWW-Authenticate at #/paths/~1public~1v1~1contacts/get/responses/401/headers/WWW-Authenticate",
            )],
            &[],
        ),
        row(
            &[WwwAuthenticateBasic],
            &[(
                "bad-key-rejected",
                "contract: listContacts (GET /public/v1/contacts): 401 response header WWW-Authenticate: `Basic realm=\"reference\"`: ",
            )],
            &[],
        ),
        // CON-005: the deprecated operation's headers (the document marks
        // them required, so the `contract` property fails with them).
        row(
            &[NoDeprecationHeader],
            &[(
                "legacy-total-deprecated",
                "deprecation: totalMessages (GET /public/v1/messages/total) answered 200 (x-request-id: ",
            )],
            &[],
        ),
        row(
            &[DeprecationDraftSyntax],
            &[(
                "legacy-total-deprecated",
                "with Deprecation: `true`, which is not an RFC 9745 date",
            )],
            &[],
        ),
        // CON-004: the delivery lacks a field its event schema requires.
        row(
            &[WebhookMissingField],
            &[(
                "message-event-documented",
                "payload: delivery 1 (X-Botix-Request-Id: ",
            )],
            &[],
        ),
        row(
            &[SunsetIsoDate],
            &[(
                "legacy-total-deprecated",
                "with Sunset: `2027-06-30T23:59:59Z`, which is not an HTTP-date (RFC 8594 §3)",
            )],
            &[],
        ),
    ],
};

/// The polling fallback (issue 41): a cursor that skips under inserts fails
/// only `no_gaps`, a repeated page only `no_duplicates`, and an event dropped
/// after its last failed delivery only `retrievable`.
static POLLING: Table = Table {
    family: DefectFamily::Polling,
    suite: "suites/polling.yaml",
    runner: Runner::Reference,
    width: 2,
    rows: &[
        row(
            &[OffsetCursor],
            &[(
                "poll-cursor-walk",
                "no_gaps: walk 2, with 2 insert(s) during it, missed 2 item(s) that existed before it started",
            )],
            &[],
        ),
        row(
            &[RepeatingCursor],
            &[(
                "poll-cursor-walk",
                "no_duplicates: walk 1 saw 5 item(s) twice",
            )],
            &[],
        ),
        // A loop is found (the same cursor twice) and counted; the other
        // properties are not judged on a walk that did not end.
        row(
            &[EndlessCursor],
            &[(
                "poll-cursor-walk",
                "terminates: walk 1: page 4 handed out the cursor",
            )],
            &[],
        ),
        row(
            &[DropsLostEvents],
            &[(
                "poll-lost-webhooks",
                "retrievable: 2 of 2 event(s) whose 4 deliveries were all refused are missing from the polled list",
            )],
            &[],
        ),
    ],
};

/// The target's own logs and metrics (catalogue §10): each defect fails
/// its one property; a log without trace ids still names each request's line by
/// its request id, so `logs_clean` judges it.
static OBSERVABILITY: Table = Table {
    family: DefectFamily::Observability,
    suite: "suites/observability.yaml",
    runner: Runner::ReferenceLogs,
    width: 3,
    rows: &[
        row(
            &[LogsWithoutTraceId],
            &[("logs-correlated", "without it in `trace_id`")],
            &[],
        ),
        row(
            &[LogsSecrets],
            &[(
                "logs-clean",
                "holds a secret of the suite (raw or encoded): at line 1",
            )],
            &[],
        ),
        row(
            &[LogsPii],
            &[(
                "logs-clean",
                "holds personal data the request carried: a card number at line 1",
            )],
            &[],
        ),
        row(
            &[RedMissingRoute],
            &[(
                "red-metrics",
                "GET /public/v1/contacts: no http_requests_total{method=\"GET\",route=\"/public/v1/contacts\"}",
            )],
            &[],
        ),
    ],
};

/// Every family's table.
const TABLES: &[&Table] = &[
    &FOUNDATION,
    &IDEMPOTENCY,
    &RATE_LIMIT,
    &TRACE,
    &WEBHOOK,
    &CLIENT,
    &TRANSPORT,
    &TRANSPORT_MTLS,
    &CONTRACT,
    &LOAD,
    &POLLING,
    // Run by tests/serial/dependency.rs (its own binary: its suite judges timing).
    &common::dependency::DEPENDENCY,
    &AUTH,
    &OBSERVABILITY,
];

/// Credentials and environments: the production twin takes the sandbox's
/// keys. The shipped suite's probes are read-only, so nothing is created
/// there (tests/it/auth.rs proves `nothing_created` fails with writes).
static AUTH: Table = Table {
    family: DefectFamily::Auth,
    suite: "suites/sandbox.yaml",
    runner: Runner::SandboxAndProduction,
    width: 2,
    rows: &[row(
        &[SandboxKeyWorksInProduction],
        &[(
            "sandbox-isolated",
            "sandbox_refused_by_production: production accepted the sandbox credential: GET http://127.0.0.1:",
        )],
        &[],
    )],
};

/// Kinds no defect of the reference can make fail yet, with why. The coverage
/// test fails when one of them gets a row (remove it here then) or a new gap opens.
const KNOWN_GAPS: &[(&str, &str)] = &[];

#[test]
fn foundation_defects() {
    let _alone = common::alone();
    run_table(&FOUNDATION);
}

#[test]
fn idempotency_defects() {
    let _alone = common::alone();
    run_table(&IDEMPOTENCY);
}

#[test]
fn rate_limit_defects() {
    let _alone = common::alone();
    run_table(&RATE_LIMIT);
}

#[test]
fn trace_defects() {
    let _alone = common::alone();
    run_table(&TRACE);
}

#[test]
fn webhook_defects() {
    let _alone = common::alone();
    run_table(&WEBHOOK);
}

#[test]
fn client_defects() {
    let _alone = common::alone();
    run_table(&CLIENT);
}

#[test]
fn transport_defects() {
    let _alone = common::alone();
    run_table(&TRANSPORT);
    run_table(&TRANSPORT_MTLS);
}

#[test]
fn contract_defects() {
    let _alone = common::alone();
    run_table(&CONTRACT);
}

#[test]
fn load_defects() {
    let _alone = common::alone();
    run_table(&LOAD);
}

#[test]
fn polling_defects() {
    let _alone = common::alone();
    run_table(&POLLING);
}

#[test]
fn auth_defects() {
    let _alone = common::alone();
    run_table(&AUTH);
}

#[test]
fn observability_defects() {
    let _alone = common::alone();
    run_table(&OBSERVABILITY);
}

/// Every defect of the reference (the list behind `tminus reference
/// --list-defects`) is in its family's tables only; the families' tables in order.
#[test]
fn every_defect_has_exactly_one_home() {
    let _alone = common::alone();
    let homes = defect_tables(TABLES);
    let mut problems = Vec::new();
    for d in Defect::all() {
        match homes.get(d).map(Vec::as_slice) {
            None | Some([]) => problems.push(format!("{d} ({}) is in no table", d.family())),
            Some([f]) if *f == d.family() => {}
            Some(fs) => problems.push(format!(
                "{d} belongs to {} but is in the tables of {fs:?}",
                d.family()
            )),
        }
    }
    // A family may have more than one table (transport: one per runner),
    // next to each other.
    let mut families: Vec<DefectFamily> = TABLES.iter().map(|t| t.family).collect();
    families.dedup();
    assert_eq!(
        families,
        DefectFamily::all(),
        "one table per family, in order"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Rows name real checks, once each, and no check both fails and skips.
#[test]
fn rows_are_well_formed() {
    let _alone = common::alone();
    let mut problems = Vec::new();
    for t in TABLES {
        for r in t.rows {
            let who = format!("{}: {:?} on {}", t.family, r.defects, r.suite(t));
            let declared = common::harness::declared(r.suite(t));
            let mut seen = BTreeSet::new();
            for id in r
                .fails
                .iter()
                .map(|(id, _)| *id)
                .chain(r.skips.iter().copied())
                .chain(r.errors.iter().map(|(id, _)| *id))
            {
                if !seen.insert(id) {
                    problems.push(format!("{who}: `{id}` named twice"));
                }
                if declared.kind_of(id).is_none() {
                    problems.push(format!("{who}: `{id}` is not a check of the suite"));
                }
            }
            if r.defects.is_empty()
                || r.fails.is_empty() && r.skips.is_empty() && r.errors.is_empty()
            {
                problems.push(format!("{who}: a row needs defects and an effect"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every check kind of the registry (and the load family's results) is made to
/// fail by at least one row, but the known gaps.
#[test]
fn every_kind_is_failed_by_some_row() {
    let _alone = common::alone();
    let failed = failed_kinds(TABLES);
    let mut wanted: BTreeSet<String> = tminus::families::kind_names().map(String::from).collect();
    wanted.insert("load".into());
    let gaps: BTreeSet<String> = KNOWN_GAPS.iter().map(|(k, _)| k.to_string()).collect();
    let uncovered: BTreeSet<String> = wanted
        .iter()
        .filter(|k| !failed.contains(*k))
        .cloned()
        .collect();
    let new_gaps: Vec<&String> = uncovered.difference(&gaps).collect();
    let closed: Vec<&String> = gaps.difference(&uncovered).collect();
    assert!(
        new_gaps.is_empty(),
        "no row makes these kinds fail: {new_gaps:?} (add a reference defect and its row)"
    );
    assert!(
        closed.is_empty(),
        "these kinds now fail in some row: {closed:?}: remove them from KNOWN_GAPS"
    );
    for k in &failed {
        assert!(wanted.contains(k), "`{k}` is not a kind of the registry");
    }
}
