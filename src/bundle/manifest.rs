//! The bundle's manifest: an in-toto Statement v1 whose subjects are every
//! file in the bundle with its SHA-256, and whose predicate is the in-toto
//! test-result predicate v0.1 (result, passed/warned/failed tests, the
//! suites as its configuration) with tminus's own fields under `tminus`
//! where the predicate has none: version, target, times, whether the whole
//! plan ran, the secrets redacted (names only), coverage and waivers.
//!
//! Everything comes from the run's `report.json` (already redacted) and the
//! files' bytes, so `tminus run --bundle` and `tminus bundle REPORT_DIR`
//! write the same manifest for the same run.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::archive::Entry;

pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://in-toto.io/attestation/test-result/v0.1";

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// One suite as bundled: its name inside the bundle and what the report says.
#[derive(Debug, Clone)]
pub struct BundledSuite {
    pub bundled_as: String,
    pub digest: String,
}

/// Whether the whole plan ran, and if not, why (`report.json` says it).
pub fn completeness(report: &Value) -> (bool, Vec<String>) {
    let mut why = Vec::new();
    if report["cancelled"].as_bool().unwrap_or(true) {
        why.push("the run was cancelled or interrupted".to_owned());
    }
    for s in report["suites"].as_array().into_iter().flatten() {
        for c in s["checks"].as_array().into_iter().flatten() {
            if c["verdict"] == "skipped" {
                why.push(format!(
                    "{}/{} did not run: {}",
                    s["name"].as_str().unwrap_or("?"),
                    c["id"].as_str().unwrap_or("?"),
                    c["message"].as_str().unwrap_or("skipped")
                ));
            }
        }
    }
    (why.is_empty(), why)
}

/// The test names of the predicate, by verdict: one per property
/// (`suite/check.property`), or per check for a one-property check.
fn tests_by_verdict(report: &Value) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut passed, mut warned, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    let mut put = |name: String, verdict: &str| match verdict {
        "pass" => passed.push(name),
        "warn" | "waived" => warned.push(name),
        "fail" | "error" => failed.push(name),
        _ => {}
    };
    for s in report["suites"].as_array().into_iter().flatten() {
        let suite = s["name"].as_str().unwrap_or("?");
        for c in s["checks"].as_array().into_iter().flatten() {
            let id = format!("{suite}/{}", c["id"].as_str().unwrap_or("?"));
            match c["assertions"].as_array().filter(|a| !a.is_empty()) {
                Some(rows) => {
                    for a in rows {
                        let p = a["property"].as_str().unwrap_or("?");
                        put(format!("{id}.{p}"), a["verdict"].as_str().unwrap_or(""));
                    }
                }
                None => put(id, c["verdict"].as_str().unwrap_or("")),
            }
        }
    }
    (passed, warned, failed)
}

/// The Statement for `files` (every file of the bundle but the envelope),
/// the run's `report` and its `suites`.
pub fn statement(files: &[Entry], report: &Value, suites: &[BundledSuite]) -> Value {
    let subject: Vec<Value> = files
        .iter()
        .map(|f| json!({ "name": f.name, "digest": { "sha256": sha256_hex(&f.bytes) } }))
        .collect();
    let (complete, incomplete) = completeness(report);
    let verdict = report["verdict"].as_str().unwrap_or("error");
    // An incomplete run certifies at best with a warning: what did not run
    // was not certified; nor was a waived property.
    let waived = report["totals"]["waived"].as_u64().unwrap_or(0) > 0;
    let result = match (verdict, complete) {
        ("pass", true) if !waived => "PASSED",
        ("pass" | "warn", _) => "WARNED",
        _ => "FAILED",
    };
    let (passed, warned, failed) = tests_by_verdict(report);
    let report_suites = report["suites"].as_array().cloned().unwrap_or_default();
    let configuration: Vec<Value> = suites
        .iter()
        .map(|s| json!({ "name": s.bundled_as, "digest": { "sha256": s.digest } }))
        .collect();
    let tminus_suites: Vec<Value> = report_suites
        .iter()
        .zip(suites)
        .map(|(r, b)| {
            json!({
                "name": r["name"],
                "file": r["file"],
                "bundled_as": b.bundled_as,
                "digest": b.digest,
                "version": r.get("version").cloned().unwrap_or(Value::Null),
                "target": r["target"],
                "profile": r["profile"],
            })
        })
        .collect();
    let mut targets: Vec<Value> = Vec::new();
    for s in &report_suites {
        if !targets.contains(&s["target"]) {
            targets.push(s["target"].clone());
        }
    }
    let started = report["started_at"].as_str().unwrap_or("");
    let duration_ms = report["duration_ms"].as_f64().unwrap_or(0.0);
    let finished = humantime::parse_rfc3339(started)
        .ok()
        .map(|t| {
            let d = std::time::Duration::from_secs_f64(duration_ms.max(0.0) / 1000.0);
            humantime::format_rfc3339_millis(t + d).to_string()
        })
        .unwrap_or_default();
    let summary = if complete {
        format!("{verdict}, complete: every planned check ran")
    } else {
        format!(
            "{verdict}, incomplete: {} (not certified: what did not run)",
            incomplete.join("; ")
        )
    };
    let mut t = Map::new();
    t.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
    t.insert("verdict".into(), json!(verdict));
    t.insert("summary".into(), json!(summary));
    t.insert("exit_code".into(), report["exit_code"].clone());
    t.insert("complete".into(), json!(complete));
    t.insert("incomplete".into(), json!(incomplete));
    t.insert("started_at".into(), json!(started));
    t.insert("finished_at".into(), json!(finished));
    t.insert("duration_ms".into(), json!(duration_ms));
    t.insert("targets".into(), Value::Array(targets));
    t.insert("suites".into(), Value::Array(tminus_suites));
    t.insert("totals".into(), report["totals"].clone());
    for key in ["secrets_redacted", "coverage", "waivers"] {
        t.insert(
            key.into(),
            report.get(key).cloned().unwrap_or_else(|| json!([])),
        );
    }
    json!({
        "_type": STATEMENT_TYPE,
        "subject": subject,
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "result": result,
            "configuration": configuration,
            "passedTests": passed,
            "warnedTests": warned,
            "failedTests": failed,
            "tminus": Value::Object(t),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(verdict: &str, cancelled: bool, skipped: bool) -> Value {
        json!({
            "verdict": verdict, "cancelled": cancelled, "exit_code": 0,
            "started_at": "2026-12-02T10:00:00.000Z", "duration_ms": 1500.0,
            "totals": {},
            "suites": [{ "name": "s", "file": "s.yaml", "target": "http://t", "profile": "botix",
              "checks": [
                { "id": "a", "verdict": "pass", "message": "ok" },
                { "id": "b", "verdict": "warn", "message": "",
                  "assertions": [{ "property": "x", "verdict": "pass" }, { "property": "y", "verdict": "warn" }] },
                { "id": "c", "verdict": if skipped { "skipped" } else { "fail" }, "message": "not run: --fail-fast" }
              ]}]
        })
    }

    #[test]
    fn a_run_that_did_not_run_everything_says_so() {
        let files = [Entry {
            name: "reports/report.json".into(),
            bytes: b"{}".to_vec(),
        }];
        let suites = [BundledSuite {
            bundled_as: "suites/s.yaml".into(),
            digest: "ab".into(),
        }];
        let s = statement(&files, &report("pass", false, true), &suites);
        assert_eq!(s["_type"], STATEMENT_TYPE);
        assert_eq!(s["predicateType"], PREDICATE_TYPE);
        assert_eq!(s["subject"][0]["digest"]["sha256"], sha256_hex(b"{}"));
        let p = &s["predicate"];
        assert_eq!(p["result"], "WARNED");
        assert_eq!(p["tminus"]["complete"], false);
        assert!(p["tminus"]["summary"]
            .as_str()
            .unwrap()
            .contains("s/c did not run: not run: --fail-fast"));
        assert_eq!(p["passedTests"], json!(["s/a", "s/b.x"]));
        assert_eq!(p["warnedTests"], json!(["s/b.y"]));
        assert_eq!(p["tminus"]["finished_at"], "2026-12-02T10:00:01.500Z");
        assert_eq!(p["configuration"][0]["name"], "suites/s.yaml");

        let failed = statement(&files, &report("fail", false, false), &suites);
        assert_eq!(failed["predicate"]["result"], "FAILED");
        assert_eq!(failed["predicate"]["failedTests"], json!(["s/c"]));
        assert_eq!(failed["predicate"]["tminus"]["complete"], true);
        let cancelled = statement(&files, &report("pass", true, false), &suites);
        assert_eq!(cancelled["predicate"]["tminus"]["complete"], false);
    }
}
