//! The run's hook: a [`Watch`] sees every response the probe's HTTP client
//! receives while a suite with a contract runs (`http::Observer`), judges
//! it, and keeps two tallies: the current check's (which becomes that
//! check's `contract` property when it finishes) and the suite's per
//! operation (the reports' summary). Checks run one at a time, so one
//! "current check" is enough. Memory is bounded: counters per operation,
//! a few messages per check, each undocumented path once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::{Contract, Level, Seen, Verdict, PROPERTY};
use crate::http::{RecordedRequest, RecordedResponse};
use crate::model::contract::{ContractSummary, OperationTally};
use crate::outcome::{Assertion, Severity};

/// Violations quoted in one check's message; the rest are counted.
const MAX_QUOTED: usize = 3;
/// Undocumented paths remembered per suite (each reported once).
const MAX_PATHS: usize = 1000;

/// Watches one suite's responses against its contract.
pub struct Watch {
    contract: Arc<Contract>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    check: CheckLog,
    /// By operation index: (seen, conforming).
    tally: BTreeMap<usize, (u64, u64)>,
    paths: BTreeSet<String>,
}

#[derive(Default)]
struct CheckLog {
    seen: u64,
    broken_must: u64,
    broken_should: u64,
    quoted: Vec<String>,
    /// What was quoted, without request ids: one line per distinct drift.
    quoted_keys: BTreeSet<String>,
    operations: BTreeSet<String>,
}

impl Watch {
    pub fn new(contract: Arc<Contract>) -> Watch {
        Watch {
            contract,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Judges one response and counts it for the current check.
    pub fn record(&self, req: &RecordedRequest, resp: &RecordedResponse) {
        let seen = Seen {
            status: resp.status,
            headers: &resp.headers,
            body: &resp.body,
        };
        let verdict = self.contract.judge(&req.method, &req.url, &seen);
        let id = resp
            .request_id()
            .map(|(k, v)| format!(" ({k}: {v})"))
            .unwrap_or_default();
        let mut s = self.lock();
        match verdict {
            Verdict::NotServed | Verdict::Ignored => {}
            Verdict::Undocumented { path } => {
                if s.paths.len() < MAX_PATHS && s.paths.insert(path.clone()) {
                    s.check.broken_should += 1;
                    let line = format!(
                        "{} {path} answered {} but no operation of the document describes it",
                        req.method, resp.status
                    );
                    quote(&mut s.check, line, &id);
                }
            }
            Verdict::Operation {
                operation,
                index,
                violations,
            } => {
                let t = s.tally.entry(index).or_default();
                t.0 += 1;
                if violations.is_empty() {
                    t.1 += 1;
                }
                s.check.seen += 1;
                s.check.operations.insert(operation.clone());
                match violations.iter().map(|v| v.level).max() {
                    Some(Level::Must) => s.check.broken_must += 1,
                    Some(Level::Should) => s.check.broken_should += 1,
                    None => {}
                }
                for v in violations {
                    let line = format!(
                        "{operation} ({} {}): {} at {}",
                        req.method,
                        super::path_of(&req.url),
                        v.message,
                        v.pointer
                    );
                    quote(&mut s.check, line, &id);
                }
            }
        }
    }

    /// Ends the current check: its `contract` assertion and the level it
    /// is judged at (`None` when it saw no response the document covers).
    pub fn finish_check(&self) -> Option<(Assertion, Severity)> {
        let log = std::mem::take(&mut self.lock().check);
        let broken = log.broken_must + log.broken_should;
        if log.seen == 0 && broken == 0 {
            return None;
        }
        let doc = &self.contract.source;
        if broken == 0 {
            let ops: Vec<&str> = log.operations.iter().map(String::as_str).collect();
            let a = Assertion::pass(
                PROPERTY,
                format!(
                    "{} responses of {} conform to {doc}",
                    log.seen,
                    ops.join(", ")
                ),
            );
            return Some((a, Severity::Must));
        }
        let severity = if log.broken_must > 0 {
            Severity::Must
        } else {
            Severity::Should
        };
        let mut message = log.quoted.join("; ");
        message.push_str(&format!(
            " ({broken} of {} responses differ)",
            log.seen.max(broken)
        ));
        let a = Assertion::fail(
            PROPERTY,
            message,
            format!("every response as {doc} describes it"),
            format!(
                "{broken} of {} responses differ ({} MUST, {} SHOULD)",
                log.seen.max(broken),
                log.broken_must,
                log.broken_should
            ),
        );
        Some((a, severity))
    }

    /// The suite's per-operation figures.
    pub fn summary(&self, suite: &str) -> ContractSummary {
        let s = self.lock();
        ContractSummary {
            suite: suite.to_owned(),
            document: self.contract.source.clone(),
            openapi: self.contract.openapi.clone(),
            operations: self
                .contract
                .operations()
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    let (seen, conforming) = s.tally.get(&i).copied().unwrap_or_default();
                    OperationTally {
                        operation: o.id.clone(),
                        method: o.method.clone(),
                        path: o.template.text.clone(),
                        seen,
                        conforming,
                    }
                })
                .collect(),
            undocumented_paths: s.paths.iter().cloned().collect(),
        }
    }
}

/// Quotes `line` (with the first request id that showed it) unless the
/// same drift was quoted already or enough were.
fn quote(log: &mut CheckLog, line: String, id: &str) {
    if log.quoted.len() < MAX_QUOTED && log.quoted_keys.insert(line.clone()) {
        log.quoted.push(format!("{line}{id}"));
    }
}

impl crate::http::Observer for Watch {
    fn response(&self, request: &RecordedRequest, response: &RecordedResponse) {
        self.record(request, response);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict as V;

    const DOC: &str = r#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
      "paths": {"/a": {"get": {"operationId": "getA", "responses": {
        "200": {"description": "ok", "headers": {"X-Id": {"required": true, "schema": {"type": "string"}}},
                "content": {"application/json": {"schema": {"type": "object", "required": ["a"]}}}}}}}}}"#;

    fn watch() -> Watch {
        Watch::new(Arc::new(Contract::from_text(DOC, "t.json").unwrap()))
    }

    fn send(w: &Watch, path: &str, status: u16, headers: &[(&str, &str)], body: &str) {
        let req = RecordedRequest {
            method: "GET".into(),
            url: format!("http://127.0.0.1:1{path}"),
            headers: Vec::new(),
            body: Vec::new(),
        };
        let mut hs: Vec<(String, String)> =
            vec![("content-type".into(), "application/json".into())];
        hs.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let resp = RecordedResponse {
            status,
            headers: hs,
            body: body.as_bytes().to_vec(),
        };
        w.record(&req, &resp);
    }

    #[test]
    fn a_check_gets_the_worst_level_and_paths_are_reported_once() {
        let w = watch();
        assert!(w.finish_check().is_none(), "nothing seen, nothing judged");
        send(&w, "/a", 200, &[("X-Id", "1")], r#"{"a": 1}"#);
        let (a, sev) = w.finish_check().unwrap();
        assert_eq!((a.verdict, sev), (V::Pass, Severity::Must));
        // A missing header alone: a SHOULD.
        send(&w, "/a", 200, &[("x-request-id", "r-1")], r#"{"a": 1}"#);
        let (a, sev) = w.finish_check().unwrap();
        assert_eq!((a.verdict, sev), (V::Fail, Severity::Should));
        assert!(
            a.message.contains("lacks the required header X-Id"),
            "{}",
            a.message
        );
        assert!(a.message.contains("(x-request-id: r-1)"), "{}", a.message);
        // A schema violation with it: MUST; the same drift quoted once.
        send(&w, "/a", 200, &[], r#"{"b": 1}"#);
        send(&w, "/a", 200, &[], r#"{"b": 2}"#);
        let (a, sev) = w.finish_check().unwrap();
        assert_eq!((a.verdict, sev), (V::Fail, Severity::Must));
        assert_eq!(
            a.message.matches("\"a\" is a required property").count(),
            1,
            "{}",
            a.message
        );
        assert!(
            a.message.ends_with("(2 of 2 responses differ)"),
            "{}",
            a.message
        );
        // An undocumented path answered: once per suite; a 404 is not drift.
        send(&w, "/b", 200, &[], "{}");
        send(&w, "/b", 200, &[], "{}");
        send(&w, "/c", 404, &[], "{}");
        let (a, sev) = w.finish_check().unwrap();
        assert_eq!((a.verdict, sev), (V::Fail, Severity::Should));
        assert!(
            a.message.contains("GET /b answered 200 but no operation"),
            "{}",
            a.message
        );
        send(&w, "/b", 200, &[], "{}");
        assert!(w.finish_check().is_none(), "reported once");
        let s = w.summary("s");
        assert_eq!((s.operations[0].seen, s.operations[0].conforming), (4, 1));
        assert_eq!(s.undocumented_paths, ["/b"]);
    }
}
