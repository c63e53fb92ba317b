//! Requirement coverage: which catalogue requirements (`IDEM-002`, `RL-002`,
//! `WH-006`, ... of `checks-catalogue.md`) each check kind certifies, the
//! checklist point they belong to, and the per-point table (required,
//! covered, passed) the HTML report, the JSON report and a bundle's manifest
//! show, so a partner sees what was certified and what was not run.
//!
//! The table is keyed by kind name rather than kept in each family's
//! `KINDS` rows so it reads as one list against the catalogue; a test
//! (`tests/it/coverage.rs`) holds it to the registry: every kind has a row,
//! every row is a kind, every id is in the catalogue, and every id a kind's
//! summary names is in its row.

use serde::Serialize;

use crate::outcome::Verdict;

/// One point of the catalogue: its number, title and every requirement.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub number: u8,
    pub title: &'static str,
    pub ids: &'static [&'static str],
}

/// The catalogue's points (sections 1 to 6, 7 for transport security, 8
/// for a dependency that overheats, 9 for contracts in CI and 10 for no blind launch), each with all its ids:
/// what a complete certification covers.
pub const CATALOGUE: &[Point] = &[
    Point {
        number: 1,
        title: "Idempotency",
        ids: &[
            "IDEM-001", "IDEM-002", "IDEM-003", "IDEM-004", "IDEM-005", "IDEM-006", "IDEM-007",
            "IDEM-008", "IDEM-009", "IDEM-010", "IDEM-C01", "IDEM-C02", "IDEM-C03", "IDEM-C04",
        ],
    },
    Point {
        number: 2,
        title: "Rate limits and retry behaviour",
        ids: &[
            "RL-001",
            "RL-002",
            "RL-003",
            "RL-004",
            "RL-005",
            "RL-006",
            "RL-007",
            "RETRY-001",
            "RETRY-002",
            "RETRY-003",
            "RETRY-004",
            "RETRY-005",
            "RETRY-006",
            "RETRY-007",
            "RETRY-008",
        ],
    },
    Point {
        number: 3,
        title: "Webhooks",
        ids: &[
            "WH-000", "WH-001", "WH-002", "WH-003a", "WH-003b", "WH-004", "WH-005", "WH-006",
            "WH-007", "WH-008", "WH-009", "WH-010", "WH-011", "WH-012", "WH-013", "WH-014",
            "WH-015", "WHS-001", "WHS-002", "WHS-003", "WHS-004", "WHS-005", "WHS-006",
        ],
    },
    Point {
        number: 4,
        title: "Trace correlation",
        ids: &[
            "TRC-001", "TRC-002", "TRC-003", "TRC-004", "TRC-005", "TRC-006", "TRC-007", "TRC-008",
            "TRC-009", "TRC-C01",
        ],
    },
    Point {
        number: 5,
        title: "Load / SLO",
        ids: &[
            "LOAD-001", "LOAD-002", "LOAD-003", "LOAD-004", "LOAD-005", "LOAD-006", "LOAD-007",
        ],
    },
    Point {
        number: 6,
        title: "Polling fallback",
        ids: &["POLL-001", "POLL-002", "POLL-003"],
    },
    // Not in the catalogue's six points: the seed's third launch mistake
    // (weak transport security), numbered here (docs/transport.md).
    Point {
        number: 7,
        title: "Transport security",
        ids: &[
            "SEC-001", "SEC-002", "SEC-003", "SEC-004", "SEC-005", "SEC-006",
        ],
    },
    Point {
        number: 8,
        title: "A dependency that overheats",
        ids: &["DEP-001", "DEP-002", "DEP-003", "DEP-004", "DEP-005"],
    },
    // The seeds' fourth launch mistake (docs/contract.md): CON-001 is the
    // runner's `contract` property and CON-002 `tminus contract diff`, no
    // kinds, so a run's table shows them required and not covered.
    Point {
        number: 9,
        title: "Contracts in CI",
        ids: &["CON-001", "CON-002", "CON-003", "CON-004", "CON-005"],
    },
    // Catalogue section 10, the seed's fifth launch mistake.
    Point {
        number: 10,
        title: "No blind launch",
        ids: &["OBS-001", "OBS-002", "OBS-003", "OBS-004"],
    },
];

/// What a kind certifies: catalogue ids (none for `steps`, whose meaning is
/// the suite author's); its point is its first id's (a dependency kind also
/// certifies the load point's LOAD-004 or LOAD-007, which it judges too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Requirements {
    pub point: Option<u8>,
    pub ids: &'static [&'static str],
}

/// Every kind with the ids it certifies.
pub const KINDS: &[(&str, &[&str])] = &[
    ("steps", &[]),
    ("idempotency.replay", &["IDEM-002"]),
    // Two keys, two executions: the other side of IDEM-002's dedupe.
    ("idempotency.distinct_keys", &["IDEM-002"]),
    ("idempotency.mismatch", &["IDEM-003"]),
    ("idempotency.concurrent", &["IDEM-004"]),
    // A retry after a lost answer: the dangerous case of IDEM-009.
    ("idempotency.lost_response", &["IDEM-009"]),
    ("idempotency.errors_not_cached", &["IDEM-008"]),
    ("idempotency.in_flight", &["IDEM-009"]),
    ("idempotency.missing_key", &["IDEM-001"]),
    ("idempotency.key_scope", &["IDEM-005"]),
    ("idempotency.key_syntax", &["IDEM-006"]),
    ("idempotency.endpoint_scope", &["IDEM-010"]),
    ("idempotency.expiry", &["IDEM-007"]),
    (
        "client.idempotency_keys",
        &["IDEM-C01", "IDEM-C02", "IDEM-C03"],
    ),
    ("client.replay_is_success", &["IDEM-C04"]),
    // The client family's kind, but the trace point's requirement.
    ("client.traceparent", &["TRC-C01"]),
    // The client family's kind, but the polling point's requirement.
    ("client.polling", &["POLL-003"]),
    ("rate_limit.headers", &["RL-001", "RL-005"]),
    ("rate_limit.storm", &["RL-002", "RL-006", "RL-007"]),
    ("rate_limit.recovery", &["RL-003"]),
    ("rate_limit.partition", &["RL-004"]),
    ("client.respects_retry_after", &["RETRY-001"]),
    ("client.exponential_backoff", &["RETRY-003"]),
    ("client.jitter", &["RETRY-005"]),
    ("client.bounded", &["RETRY-003", "RETRY-004"]),
    ("client.no_retry_on_4xx", &["RETRY-002"]),
    ("client.retry_503_policy", &["RETRY-008"]),
    ("client.slows_before_limit", &["RETRY-006"]),
    ("client.retry_amplification", &["RETRY-007"]),
    ("transport.protocol", &["SEC-001"]),
    ("transport.certificate", &["SEC-002"]),
    ("transport.hsts", &["SEC-003"]),
    ("transport.cors", &["SEC-004"]),
    ("transport.mtls_required", &["SEC-005"]),
    ("transport.https_redirect", &["SEC-006"]),
    ("webhook.accepts_valid", &["WH-000"]),
    ("webhook.rejects_missing_headers", &["WH-001"]),
    ("webhook.rejects_forged", &["WH-002"]),
    ("webhook.accepts_raw_bytes", &["WH-003a"]),
    ("webhook.rejects_reserialized", &["WH-003b"]),
    ("webhook.rejects_truncated", &["WH-004"]),
    ("webhook.rejects_wrong_scheme", &["WH-005"]),
    ("webhook.rejects_stale", &["WH-006"]),
    ("webhook.rejects_future", &["WH-007"]),
    ("webhook.dedupes_replay", &["WH-008"]),
    ("webhook.replay_new_id", &["WH-008"]),
    ("webhook.dedupes_retry", &["WH-009"]),
    ("webhook.rejects_tampered", &["WH-010"]),
    ("webhook.key_rotation", &["WH-012"]),
    ("webhook.rejects_dotted_id", &["WH-015"]),
    ("webhook.burst", &["WH-014"]),
    ("webhook.accepts_header_case", &["WH-011"]),
    ("webhook.constant_time_compare", &["WH-013"]),
    ("webhook.sink_delivery", &["WHS-001"]),
    ("webhook.sink_retries", &["WHS-002"]),
    ("webhook.sink_stops_on_success", &["WHS-003"]),
    ("webhook.sink_stops_on_gone", &["WHS-005"]),
    ("webhook.sink_respects_retry_after", &["WHS-006"]),
    ("webhook.sink_timeout", &["WHS-004"]),
    // The webhook family's kind, but the trace point's requirement.
    ("webhook.sink_trace", &["TRC-005"]),
    ("trace.present", &["TRC-009"]),
    ("trace.unique", &["TRC-002"]),
    ("trace.propagated", &["TRC-001"]),
    ("trace.invalid_ignored", &["TRC-003"]),
    ("trace.request_id_hygiene", &["TRC-007"]),
    ("trace.async_status", &["TRC-008"]),
    ("trace.version_downgrade", &["TRC-004"]),
    ("trace.tracestate", &["TRC-006"]),
    // A burst's results: its thresholds and delivery are the burst's SLO
    // (LOAD-002), its effects the duplicate-key retries (LOAD-005).
    ("load.threshold", &["LOAD-002"]),
    // The delivery also judges the schedule itself: a run whose generator
    // dropped or delayed sends beyond the bound is invalid (LOAD-001).
    ("load.delivery", &["LOAD-002", "LOAD-001"]),
    ("load.effects", &["LOAD-005"]),
    // The capacity search (T-3's "how much can it take?").
    ("load.capacity", &["DEP-005"]),
    // The target's own pools and queues read during the burst (`observe:`).
    ("load.observe", &["LOAD-003"]),
    // The burst's own events at tminus's sink: latency and losses.
    ("load.webhooks", &["LOAD-006"]),
    ("polling.cursor_walk", &["POLL-001"]),
    ("polling.reconciles_lost_webhooks", &["POLL-002"]),
    // The dependency point (catalogue section 8); the outbound timeout and
    // the overload are also the load point's LOAD-007 and LOAD-004.
    ("dependency.timeout_budget", &["DEP-001", "LOAD-007"]),
    ("dependency.retry_bound", &["DEP-002"]),
    ("dependency.breaker", &["DEP-003"]),
    ("dependency.shed", &["DEP-004", "LOAD-004"]),
    // The no-blind-launch point (catalogue section 10): a sandbox credential
    // refused by production.
    ("auth.sandbox_isolated", &["OBS-004"]),
    ("contract.deprecation", &["CON-005"]),
    ("observability.logs_correlated", &["OBS-001"]),
    ("observability.logs_clean", &["OBS-002"]),
    ("observability.red_metrics", &["OBS-003"]),
];

/// The point an id belongs to.
pub fn point_of(id: &str) -> Option<&'static Point> {
    CATALOGUE.iter().find(|p| p.ids.contains(&id))
}

/// What kind `kind` certifies (nothing for a kind without a row).
pub fn of_kind(kind: &str) -> Requirements {
    let ids = KINDS
        .iter()
        .find_map(|(k, ids)| (*k == kind).then_some(*ids))
        .unwrap_or(&[]);
    Requirements {
        point: ids.first().and_then(|id| point_of(id)).map(|p| p.number),
        ids,
    }
}

/// One row of the coverage table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoverageRow {
    pub point: u8,
    pub title: &'static str,
    /// Every requirement of the point.
    pub required: Vec<&'static str>,
    /// Those some check of the run judged (not skipped).
    pub covered: Vec<&'static str>,
    /// Those whose every judging check passed (a warning, a waiver or a
    /// failure on any of them is not a pass).
    pub passed: Vec<&'static str>,
}

/// The coverage table of a run, one row per catalogue point, from each
/// result's requirements and verdict.
pub fn table<'a>(
    results: impl IntoIterator<Item = (&'a Requirements, Verdict)>,
) -> Vec<CoverageRow> {
    let mut covered: Vec<&'static str> = Vec::new();
    let mut not_passed: Vec<&'static str> = Vec::new();
    for (r, v) in results {
        if v == Verdict::Skipped {
            continue;
        }
        for id in r.ids {
            if !covered.contains(id) {
                covered.push(id);
            }
            if v != Verdict::Pass && !not_passed.contains(id) {
                not_passed.push(id);
            }
        }
    }
    CATALOGUE
        .iter()
        .map(|p| {
            let c: Vec<&'static str> = p
                .ids
                .iter()
                .copied()
                .filter(|i| covered.contains(i))
                .collect();
            CoverageRow {
                point: p.number,
                title: p.title,
                required: p.ids.to_vec(),
                passed: c
                    .iter()
                    .copied()
                    .filter(|i| !not_passed.contains(i))
                    .collect(),
                covered: c,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requirement_passes_only_when_every_check_of_it_passed() {
        let replay = of_kind("idempotency.replay");
        let distinct = of_kind("idempotency.distinct_keys");
        let storm = of_kind("rate_limit.storm");
        let trace = of_kind("trace.unique");
        assert_eq!(replay.point, Some(1));
        assert_eq!(of_kind("webhook.sink_trace").point, Some(4));
        assert_eq!(of_kind("steps"), Requirements::default());
        let t = table([
            (&replay, Verdict::Pass),
            (&distinct, Verdict::Fail),
            (&storm, Verdict::Pass),
            (&trace, Verdict::Skipped),
        ]);
        assert_eq!(t[0].covered, ["IDEM-002"]);
        assert!(t[0].passed.is_empty());
        assert_eq!(t[1].covered, ["RL-002", "RL-006", "RL-007"]);
        assert_eq!(t[1].passed, t[1].covered);
        assert_eq!(t[1].required.len(), 15);
        // Skipped is not covered.
        assert!(t[3].covered.is_empty());
        assert_eq!(t.len(), CATALOGUE.len());
    }
}
