//! Issue 22 case 4: the early IETF draft's separate `RateLimit-Limit`,
//! `RateLimit-Remaining` and `RateLimit-Reset` fields (delta-seconds reset;
//! draft-ietf-httpapi-ratelimit-headers -00 to -06, and express-rate-limit's
//! `standardHeaders: 'draft-6'`, which adds `RateLimit-Policy: 100;w=60`)
//! are found by `rate_limit.headers` in auto mode, judged by their own syntax
//! and consistency rules, and sent by `tminus reference --rate-limit-dialect`.

use crate::common;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderValue};
use axum::routing::get;
use common::{run_with_json, AppHandle, RefProcess};
use tminus::reference::{RateLimitConfig, RateLimitDialect, ReferenceConfig};

/// One `rate_limit.headers` check in auto mode (no `dialect:`) on `path`.
fn headers_suite(dir: &Path, path: &str) -> std::path::PathBuf {
    let suite = dir.join("s.yaml");
    std::fs::write(
        &suite,
        format!(
            "suite: s\ntarget:\n  headers: {{ Authorization: \"Bearer ref_test_key_a\" }}\nchecks:\n  - id: h\n    kind: rate_limit.headers\n    samples: 6\n    requests: [{{ path: {path} }}]\n"
        ),
    )
    .unwrap();
    suite
}

/// Runs the check against `url`: (check verdict, [(property, verdict)], report text).
fn run_headers(url: &str, path: &str) -> (String, Vec<(String, String)>, String) {
    let dir = tempfile::tempdir().unwrap();
    let suite = headers_suite(dir.path(), path);
    let (json, out) = run_with_json(dir.path(), &suite, url, &[], &[]);
    let text = std::fs::read_to_string(&json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let check = &v["suites"][0]["checks"][0];
    let props = check["assertions"]
        .as_array()
        .unwrap_or_else(|| panic!("no assertions: {check:#}"))
        .iter()
        .map(|a| {
            (
                a["property"].as_str().unwrap().to_owned(),
                a["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let all = format!("{text}\n{}", common::stdout(&out));
    (check["verdict"].as_str().unwrap().to_owned(), props, all)
}

fn verdict_of<'a>(props: &'a [(String, String)], property: &str) -> &'a str {
    props
        .iter()
        .find(|(p, _)| p == property)
        .map(|(_, v)| v.as_str())
        .unwrap_or("absent")
}

/// How the third-party limiter below breaks its fields.
#[derive(Clone, Copy)]
enum Break {
    None,
    /// Reset as an epoch time, which the early draft forbids.
    EpochReset,
    /// `RateLimit-Policy` states another quota than `RateLimit-Limit`.
    PolicyDisagrees,
    /// No `RateLimit-Policy` (the draft's revisions -00 to -04 had none).
    NoPolicy,
    /// `RateLimit-Remaining` counts up inside one window.
    RemainingRises,
    /// `RateLimit-Reset` two windows beyond the policy's `w=60`.
    ResetBeyondWindow,
}

/// A limiter that talks as express-rate-limit does with
/// `standardHeaders: 'draft-6'`: 100 requests per fixed 60 s window.
fn draft6_app(b: Break) -> AppHandle {
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let app = axum::Router::new().route(
        "/x",
        get(move || {
            let count = count.clone();
            async move {
                let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
                let secs = now.as_secs();
                let end = (secs / 60 + 1) * 60;
                let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                let mut h = HeaderMap::new();
                let mut set = |k: &'static str, v: String| {
                    h.insert(k, HeaderValue::from_str(&v).unwrap());
                };
                set(
                    "date",
                    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs)),
                );
                let policy = match b {
                    Break::PolicyDisagrees => "50;w=60",
                    _ => "100;w=60",
                };
                if !matches!(b, Break::NoPolicy) {
                    set("ratelimit-policy", policy.into());
                }
                set("ratelimit-limit", "100".into());
                let remaining = match b {
                    Break::RemainingRises => n,
                    _ => 100u64.saturating_sub(n),
                };
                set("ratelimit-remaining", remaining.to_string());
                let reset = match b {
                    Break::EpochReset => end,
                    // Well past w=60 at any second of the minute (at :59,
                    // `+ 60` came to 61, within the checker's tolerance).
                    Break::ResetBeyondWindow => end - secs + 120,
                    _ => end - secs,
                };
                set("ratelimit-reset", reset.to_string());
                (h, "ok")
            }
        }),
    );
    AppHandle::start(app)
}

// Failed before the fix: the policy made auto mode read the fields as the
// structured dialect, and `syntax` failed ("RateLimit is missing (IETF
// structured dialect)").
#[test]
fn express_draft6_fields_are_found_in_auto_mode() {
    let app = draft6_app(Break::None);
    let (verdict, props, text) = run_headers(&app.url, "/x");
    assert_eq!(verdict, "pass", "{text}");
    for p in ["present", "syntax", "consistency"] {
        assert_eq!(verdict_of(&props, p), "pass", "{p}: {text}");
    }
    assert!(text.contains("ietf-draft6"), "{text}");
}

// Failed before the fix with a WARN: `present` found "no rate-limit headers".
#[test]
fn early_draft_fields_without_a_policy_are_found_in_auto_mode() {
    let app = draft6_app(Break::NoPolicy);
    let (verdict, props, text) = run_headers(&app.url, "/x");
    assert_eq!(verdict, "pass", "{text}");
    assert_eq!(verdict_of(&props, "consistency"), "pass", "{text}");
    assert!(text.contains("ietf-draft6"), "{text}");
}

#[test]
fn an_epoch_reset_fails_syntax_in_the_early_draft() {
    let app = draft6_app(Break::EpochReset);
    let (verdict, props, text) = run_headers(&app.url, "/x");
    assert_eq!(verdict, "fail", "{text}");
    assert_eq!(verdict_of(&props, "syntax"), "fail", "{text}");
    assert_eq!(verdict_of(&props, "present"), "pass", "{text}");
    assert!(text.contains("RateLimit-Reset"), "{text}");
    assert!(text.contains("delta seconds"), "{text}");
}

#[test]
fn a_policy_that_disagrees_with_the_limit_fails_consistency() {
    let app = draft6_app(Break::PolicyDisagrees);
    let (verdict, props, text) = run_headers(&app.url, "/x");
    assert_eq!(verdict, "fail", "{text}");
    assert_eq!(verdict_of(&props, "consistency"), "fail", "{text}");
    // Fields that disagree were read: `syntax` passes on them, naming the dialect.
    assert_eq!(verdict_of(&props, "syntax"), "pass", "{text}");
    assert!(text.contains("parsed (ietf-draft6)"), "{text}");
    assert!(text.contains("RateLimit-Policy"), "{text}");
}

#[test]
fn the_window_rules_hold_for_the_early_draft() {
    for (b, why) in [
        (Break::RemainingRises, "remaining went up"),
        (Break::ResetBeyondWindow, "outside [0, 60] s"),
    ] {
        let app = draft6_app(b);
        let (verdict, props, text) = run_headers(&app.url, "/x");
        assert_eq!(verdict, "fail", "{why}: {text}");
        assert_eq!(verdict_of(&props, "consistency"), "fail", "{why}: {text}");
        assert_eq!(verdict_of(&props, "syntax"), "pass", "{why}: {text}");
        assert!(text.contains(why), "{why}: {text}");
    }
}

#[test]
fn reference_draft6_passes_in_auto_mode() {
    let r = RefProcess::start(&["--rate-limit-dialect", "draft6"]);
    let (verdict, props, text) = run_headers(&r.url, "/public/v1/contacts");
    assert_eq!(verdict, "pass", "{text}");
    assert_eq!(verdict_of(&props, "present"), "pass", "{text}");
    assert!(text.contains("ietf-draft6"), "{text}");
    assert!(
        !text.contains("legacy"),
        "draft6 alone sends no X-RateLimit-*: {text}"
    );
    drop(r);
    // With a per-day limit the policy states both quotas; the shipped
    // suite's samples (4xx included) pass in auto mode.
    let r = RefProcess::start(&[
        "--rate-limit-dialect",
        "draft6",
        "--rate-limit-daily",
        "100000",
    ]);
    let (v, out) =
        common::run_suite_against("suites/rate-limit.yaml", &r.url, &["--only", "rl-headers"]);
    assert_eq!(
        common::not_passing(&v),
        Vec::<String>::new(),
        "{}",
        common::stdout(&out)
    );
}

#[test]
fn reference_refuses_dialects_that_cannot_share_a_response() {
    let dir = tempfile::tempdir().unwrap();
    for (arg, why) in [
        ("draft7,ietf", "cannot share a response"),
        (
            "draft9",
            "`draft9` is not legacy, draft6, draft7, ietf or all",
        ),
    ] {
        let out = common::tminus(
            dir.path(),
            &["reference", "--rate-limit-dialect", arg],
            &[],
            Duration::from_secs(10),
        );
        assert_eq!(out.status.code(), Some(2), "{arg}");
        assert!(
            common::stderr(&out).contains(why),
            "{arg}: {}",
            common::stderr(&out)
        );
    }
}

#[test]
fn reference_dialect_switch_sends_each_dialect() {
    // Every choice, and today's default (legacy + structured IETF), is read
    // back by auto mode as the dialects it names.
    for (dialects, seen) in [
        (vec![RateLimitDialect::Legacy], "legacy"),
        (vec![RateLimitDialect::Draft7], "ietf-draft7"),
        (vec![RateLimitDialect::Ietf], "ietf"),
        (
            RateLimitDialect::ALL.to_vec(),
            "legacy,ietf-draft6,ietf-draft7",
        ),
        (RateLimitConfig::default().dialects, "legacy,ietf"),
    ] {
        let r = common::RefHandle::start_with(ReferenceConfig {
            rate_limit: RateLimitConfig {
                dialects,
                ..RateLimitConfig::default()
            },
            ..ReferenceConfig::default()
        });
        let (verdict, _, text) = run_headers(&r.url, "/public/v1/contacts");
        assert_eq!(verdict, "pass", "{seen}: {text}");
        assert!(
            text.contains(&format!("\"dialects\": \"{seen}\""))
                || text.contains(&format!("\"dialects\":\"{seen}\"")),
            "{seen}: {text}"
        );
    }
}
