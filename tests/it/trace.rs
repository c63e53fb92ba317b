//! The trace-correlation family, end to end and in parts (its defect table is in
//! `tests/serial/defects.rs`): failures quote what was seen, and the traceparent and
//! tracestate code follows W3C Trace Context.

use crate::common;

use common::{run_suite_against, RefHandle};
use tminus::families::trace::plan::InvalidCase;
use tminus::families::trace::traceparent::{self, Invalid};
use tminus::families::trace::tracestate;
use tminus::model::retry_after::parse_retry_after;
use tminus::reference::Defect;

const SUITE: &str = "suites/trace.yaml";

/// Failures name what was seen, including the response's request id, so a
/// partner can attach it to a ticket.
#[test]
fn failures_quote_the_ids_seen() {
    let server = RefHandle::start(&[Defect::TraceNotPropagated]);
    let (_, out) = run_suite_against(SUITE, &server.url, &["--only", "traceparent-propagated"]);
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(text.contains("sent traceparent 00-"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("(x-request-id: "),
        "{text}"
    );

    // A repeat decides: the check stops at it instead of sending its 1,000.
    let server = RefHandle::start(&[Defect::ConstantTraceId]);
    let (_, out) = run_suite_against(SUITE, &server.url, &["--only", "trace-ids-unique"]);
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(
        text.contains("4bf92f3577b34da6a3ce929d0e0e4736 appeared"),
        "{text}"
    );
    let (distinct, responses) = distinct_on(&text);
    assert_eq!(distinct, 1, "{text}");
    assert!((2..=16).contains(&responses), "{text}");
}

/// `N distinct Trace-Id values on M responses` in a failure message.
fn distinct_on(text: &str) -> (usize, usize) {
    let at = text.find(" distinct Trace-Id values on ").expect(text);
    let n = text[..at].rsplit(' ').next().unwrap().parse().unwrap();
    let rest = &text[at + " distinct Trace-Id values on ".len()..];
    let m = rest.split(' ').next().unwrap().parse().unwrap();
    (n, m)
}

/// The ids the run's other fresh answers carried count toward the 1,000:
/// the whole suite's check sends fewer than 1,000 of its own, and a
/// constant id is caught by its first requests, the pool's answers named.
#[test]
fn uniqueness_counts_the_runs_other_answers() {
    let server = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    // The storm's answers before it (`Need::Pool` puts the check last,
    // whatever the author's order), then the uniqueness check.
    let src = "suite: pool\nchecks:\n  - id: unique\n    kind: trace.unique\n    request: { path: /healthz }\n    count: 300\n  - id: storm\n    kind: rate_limit.storm\n    request: { path: /public/v1/messages/count }\n";
    std::fs::write(&suite, src).unwrap();
    let (json, out) = common::run_with_json(dir.path(), &suite, &server.url, &[], &[]);
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let checks = report["suites"][0]["checks"].as_array().unwrap();
    let ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["storm", "unique"], "{text}");
    let unique = &checks[1];
    let props = &unique["properties"];
    let elsewhere = props["seen_elsewhere"].as_u64().unwrap();
    let sent = props["sent"].as_u64().unwrap();
    assert!(elsewhere >= 200, "the storm's answers carry ids: {props}");
    assert_eq!(sent, 300u64.saturating_sub(elsewhere).max(100), "{props}");
    let message = unique["assertions"][2]["message"].as_str().unwrap();
    assert!(message.contains("of the run's other answers"), "{message}");
}

const T: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const P: &str = "00f067aa0ba902b7";

#[test]
fn traceparent_parses_valid_values() {
    let tp = traceparent::parse(&format!("00-{T}-{P}-01")).unwrap();
    assert_eq!((tp.version.as_str(), tp.trace_id.as_str()), ("00", T));
    assert_eq!((tp.parent_id.as_str(), tp.flags.as_str()), (P, "01"));
    // Surrounding optional whitespace is allowed (OWS).
    assert!(traceparent::parse(&format!(" 00-{T}-{P}-00 ")).is_ok());
    // A higher version may carry extra fields (forward compatibility, TRC-004).
    let future = traceparent::parse(&format!("01-{T}-{P}-01-what-the-future")).unwrap();
    assert_eq!(future.trace_id, T);
}

#[test]
fn traceparent_rejects_each_invalid_form_for_its_reason() {
    let cases = [
        (
            format!("00-{}-{P}-01", T.to_uppercase()),
            Invalid::NotLowercaseHex,
        ),
        (
            format!("00-{}-{P}-01", "0".repeat(32)),
            Invalid::ZeroTraceId,
        ),
        (
            format!("00-{T}-{}-01", "0".repeat(16)),
            Invalid::ZeroParentId,
        ),
        (format!("ff-{T}-{P}-01"), Invalid::VersionFf),
        (
            format!("00-{T}-{P}-01-extra"),
            Invalid::ExtraFieldOnVersion00,
        ),
        (format!("00-{}-{P}-01", &T[..31]), Invalid::Shape),
        (format!("00-{T}-{P}0-01"), Invalid::Shape),
        (format!("01-{T}-{P}-01x"), Invalid::Shape),
        (format!("00_{T}_{P}_01"), Invalid::Shape),
        (String::new(), Invalid::Shape),
        ("00-zz".into(), Invalid::Shape),
        ("é".repeat(40), Invalid::Shape),
    ];
    for (value, why) in cases {
        assert_eq!(traceparent::parse(&value), Err(why), "{value}");
    }
}

#[test]
fn every_generated_invalid_case_is_invalid_and_each_valid_base_is_valid() {
    for _ in 0..50 {
        let (t, p) = (
            traceparent::random_trace_id(),
            traceparent::random_parent_id(),
        );
        assert!(traceparent::is_w3c_trace_id(&t));
        assert!(traceparent::parse(&traceparent::format(&t, &p)).is_ok());
        for case in InvalidCase::ALL {
            let (tp, ts) = case.headers(&t, &p);
            match tp {
                Some(v) => assert!(traceparent::parse(&v).is_err(), "{}: {v}", case.name()),
                None => assert!(ts.is_some(), "{}", case.name()),
            }
        }
    }
}

#[test]
fn trace_id_is_read_from_any_header_shape() {
    assert_eq!(traceparent::trace_id_of(&format!("00-{T}-{P}-01")), T);
    assert_eq!(traceparent::trace_id_of(&format!(" {T} ")), T);
    assert_eq!(
        traceparent::fields(&format!("00-{T}-{P}-01")),
        Some((T.into(), P.into()))
    );
    assert_eq!(traceparent::fields("abc"), None);
    assert!(!traceparent::is_w3c_trace_id(&"0".repeat(32)));
    assert!(!traceparent::is_w3c_trace_id(&T.to_uppercase()));
}

#[test]
fn retry_after_accepts_seconds_and_dates() {
    assert_eq!(parse_retry_after("2").unwrap().as_secs(), 2);
    // RFC 9110 §10.2.3: delay-seconds is 1*DIGIT, no fraction.
    assert!(parse_retry_after("0.5").is_none());
    assert!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT")
        .unwrap()
        .is_zero());
    assert!(parse_retry_after("-1").is_none());
    assert!(parse_retry_after("soon").is_none());
}

fn sent3() -> Vec<(String, String)> {
    ["a", "b", "c"]
        .iter()
        .map(|k| (k.to_string(), format!("v{k}")))
        .collect()
}

#[test]
fn tracestate_judge_accepts_w3c_mutations() {
    let s = sent3();
    // Untouched, new key leftmost, updated key moved leftmost, OWS and empty members.
    for ok in [
        "a=va,b=vb,c=vc",
        "me=1,a=va,b=vb,c=vc",
        "b=new,a=va,c=vc",
        " me=1 , ,a=va,b=vb,\tc=vc",
    ] {
        let j = tracestate::judge(&s, ok, true);
        assert!(j.problems.is_empty(), "{ok}: {:?}", j.problems);
    }
    // Over the limit, dropping whole members from the right is fine.
    let many = tracestate::sample(33);
    let kept = format!("me=1,{}", tracestate::join(&many[..31]));
    let j = tracestate::judge(&many, &kept, false);
    assert!(j.problems.is_empty(), "{:?}", j.problems);
    assert_eq!((j.members, j.forwarded, j.added.len()), (32, 31, 1));
}

#[test]
fn tracestate_judge_names_each_broken_rule() {
    let s = sent3();
    let cases = [
        ("me=1,c=vc,b=vb,a=va", "member order changed"),
        (
            "a=va,me=1,b=vb,c=vc",
            "new key `me` at member #2 is not leftmost",
        ),
        ("a=va,b=vb,c=v", "cut-off copy of `c=vc`"),
        ("a=va,b=vb,c", "not a whole key=value entry"),
        (
            "a=va,b=changed,c=vc",
            "updated to `changed` but not moved leftmost",
        ),
        ("a=va,c=vc", "1 of 3 sent members dropped"),
        ("a=va,a=va,b=vb,c=vc", "appears twice"),
    ];
    for (value, why) in cases {
        let j = tracestate::judge(&s, value, true);
        assert!(
            j.problems.iter().any(|p| p.contains(why)),
            "{value}: want `{why}`, got {:?}",
            j.problems
        );
    }
    let many = tracestate::sample(33);
    let j = tracestate::judge(&many, &tracestate::join(&many), false);
    assert_eq!(j.problems, vec!["33 members, more than 32".to_string()]);
}

#[test]
fn tracestate_keys_and_values_follow_the_grammar() {
    for k in ["a", "tminus-chk00", "t@sys", "0tenant@s", "a_b-c*d/e"] {
        assert!(tracestate::is_valid_key(k), "{k}");
    }
    for k in ["", "A", "0a", "a b", "t@0s", "t@", &"a".repeat(257)] {
        assert!(!tracestate::is_valid_key(k), "{k}");
    }
    assert!(tracestate::is_valid_value("a b"));
    for v in ["", "a ", "a,b", "a=b", "é"] {
        assert!(!tracestate::is_valid_value(v), "{v}");
    }
}

/// The tracestate and version-downgrade failures quote what came back.
#[test]
fn new_checks_failures_quote_what_came_back() {
    let server = RefHandle::start(&[Defect::TracestateUnbounded]);
    let (_, out) = run_suite_against(SUITE, &server.url, &["--only", "tracestate-mutation"]);
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(text.contains("34 members, more than 32"), "{text}");

    let server = RefHandle::start(&[Defect::EchoesFutureVersion]);
    let (_, out) = run_suite_against(
        SUITE,
        &server.url,
        &["--only", "traceparent-version-downgrade"],
    );
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(text.contains("has version 01 instead of 00"), "{text}");
}
