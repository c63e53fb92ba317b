//! Ids the run has already seen: every response the checks' client receives
//! passes through here (an `http::Observer`), and the values of the headers
//! a uniqueness check judges (`trace.unique`'s `trace_header`) are kept per
//! target origin. A uniqueness check counts them as evidence beside its own
//! samples (issue 42): the storm's thousands of answers carry trace ids as
//! much as a thousand health probes do, so the check sends only what the
//! pool lacks.
//!
//! Only answers to fresh requests are kept: a request that carried trace
//! context or a request id of its own (`traceparent`, `X-Request-Id`, ...)
//! may rightly be answered with that id, and one that carried an
//! `Idempotency-Key` may be a replay of a stored answer, headers included.
//! Any id kept here was therefore minted by the target for that one
//! request, so a repeat among them is a repeat of the generator's, as a
//! repeat among the check's own samples is.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::http::{origin_of, Observer, RecordedRequest, RecordedResponse};

/// Request headers that make an answer's id not the target's own fresh one.
const CARRIES_CONTEXT: &[&str] = &[
    "traceparent",
    "tracestate",
    "x-request-id",
    "request-id",
    "x-correlation-id",
    "correlation-id",
    "x-trace-id",
    "trace-id",
    "b3",
    "x-b3-traceid",
    "uber-trace-id",
    "x-amzn-trace-id",
    "x-cloud-trace-context",
    "idempotency-key",
];

/// Ids kept per origin and header at most (memory bound: a storm of 20,000
/// answers in every suite of a run stays well under it).
pub const MAX_KEPT: usize = 200_000;

/// One id and where it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenId {
    /// The header's value as received.
    pub value: String,
    /// `GET /path → 200`, for a failure message.
    pub at: String,
}

/// (origin, lowercase header) → ids in the order they were received.
type Kept = HashMap<(String, String), Vec<SeenId>>;

/// The run's ledger of ids, shared by every check (cheap to clone).
#[derive(Clone, Default)]
pub struct Seen {
    /// Lowercase names of the headers kept (none: nothing is kept).
    headers: Arc<Vec<String>>,
    ids: Arc<Mutex<Kept>>,
}

impl std::fmt::Debug for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seen")
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

impl Seen {
    /// A ledger keeping the values of `headers` (the run's uniqueness
    /// checks' id headers).
    pub fn new(headers: impl IntoIterator<Item = String>) -> Self {
        let mut h: Vec<String> = headers.into_iter().map(|h| h.to_lowercase()).collect();
        h.sort();
        h.dedup();
        Seen {
            headers: Arc::new(h),
            ids: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many ids of `header` from `origin` are kept so far: a check marks
    /// where its own samples begin.
    pub fn mark(&self, origin: &str, header: &str) -> usize {
        self.lock()
            .get(&(origin.to_owned(), header.to_lowercase()))
            .map_or(0, Vec::len)
    }

    /// The first `upto` ids of `header` from `origin`: those seen before a
    /// check's [`Seen::mark`].
    pub fn before(&self, origin: &str, header: &str, upto: usize) -> Vec<SeenId> {
        self.lock()
            .get(&(origin.to_owned(), header.to_lowercase()))
            .map(|v| v[..upto.min(v.len())].to_vec())
            .unwrap_or_default()
    }

    /// Whether `request`'s answer carries an id the target minted for it.
    fn fresh(&self, request: &RecordedRequest) -> bool {
        !request.headers.iter().any(|(k, _)| {
            let k = k.to_lowercase();
            CARRIES_CONTEXT.contains(&k.as_str()) || self.headers.contains(&k)
        })
    }
}

impl Observer for Seen {
    fn response(&self, request: &RecordedRequest, response: &RecordedResponse) {
        if self.headers.is_empty() || !self.fresh(request) {
            return;
        }
        let origin = origin_of(&request.url);
        let path = reqwest::Url::parse(&request.url)
            .map(|u| u.path().to_owned())
            .unwrap_or_else(|_| request.url.clone());
        let mut ids = self.lock();
        for h in self.headers.iter() {
            let Some(v) = response.header(h).filter(|v| !v.is_empty()) else {
                continue;
            };
            let kept = ids.entry((origin.clone(), h.clone())).or_default();
            if kept.len() < MAX_KEPT {
                kept.push(SeenId {
                    value: v.to_owned(),
                    at: format!("{} {path} → {}", request.method, response.status),
                });
            }
        }
    }
}

/// Tells every observer in turn (the ledger beside a suite's contract
/// watch).
pub struct Tee(pub Vec<Arc<dyn Observer>>);

impl Observer for Tee {
    fn response(&self, request: &RecordedRequest, response: &RecordedResponse) {
        for o in &self.0 {
            o.response(request, response);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str, headers: &[(&str, &str)]) -> RecordedRequest {
        RecordedRequest {
            method: "GET".into(),
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
        }
    }

    fn resp(status: u16, id: &str) -> RecordedResponse {
        RecordedResponse {
            status,
            headers: vec![("Trace-Id".into(), id.into())],
            body: Vec::new(),
        }
    }

    #[test]
    fn keeps_fresh_answers_per_origin_and_leaves_out_continued_and_replayed_ones() {
        let seen = Seen::new(["Trace-Id".to_owned()]);
        let a = "http://127.0.0.1:1";
        seen.response(&req(&format!("{a}/x"), &[]), &resp(200, "id1"));
        seen.response(&req(&format!("{a}/x?q=1"), &[]), &resp(429, "id2"));
        // Continued, replayed, or naming its own id: not the target's fresh id.
        seen.response(
            &req(&format!("{a}/x"), &[("traceparent", "00-..")]),
            &resp(200, "id3"),
        );
        seen.response(
            &req(&format!("{a}/x"), &[("Idempotency-Key", "k")]),
            &resp(201, "id4"),
        );
        seen.response(
            &req(&format!("{a}/x"), &[("X-Request-Id", "r")]),
            &resp(200, "id5"),
        );
        // Another origin is another target.
        seen.response(&req("http://127.0.0.2:1/x", &[]), &resp(200, "id6"));
        assert_eq!(seen.mark(a, "trace-id"), 2);
        let before = seen.before(a, "TRACE-ID", 2);
        assert_eq!(before[0].value, "id1");
        assert_eq!(before[1].at, "GET /x → 429");
        assert_eq!(seen.before(a, "Trace-Id", 1).len(), 1);
        assert_eq!(seen.mark("http://127.0.0.2:1", "Trace-Id"), 1);
    }

    #[test]
    fn keeps_nothing_without_a_header_to_keep() {
        let seen = Seen::new(Vec::new());
        seen.response(&req("http://h/x", &[]), &resp(200, "id1"));
        assert_eq!(seen.mark("http://h", "Trace-Id"), 0);
    }
}
