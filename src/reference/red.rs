//! Per-route RED series on `/metrics` (catalogue OBS-003): for every API
//! route, by method and path template (`/public/v1/scenarios/{id}/run`, not
//! the path), the requests by status (`http_requests_total`: their rate,
//! and their errors by `status`) and their duration
//! (`http_request_duration_seconds` as a summary: `_count` and `_sum`).
//!
//! The `red-missing-route` defect leaves `GET /public/v1/contacts` out.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::defect::Defect;
use super::state::AppState;

/// The route `red-missing-route` leaves out.
const LEFT_OUT: (&str, &str) = ("GET", "/public/v1/contacts");

/// Counts per (method, route, status) and durations per (method, route).
#[derive(Default)]
pub(crate) struct Red {
    inner: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    requests: BTreeMap<(String, String, u16), u64>,
    /// (count, seconds)
    durations: BTreeMap<(String, String), (u64, f64)>,
}

/// A label value as the text format writes it.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Red {
    fn record(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *c.requests
            .entry((method.to_owned(), route.to_owned(), status))
            .or_default() += 1;
        let d = c
            .durations
            .entry((method.to_owned(), route.to_owned()))
            .or_default();
        d.0 += 1;
        d.1 += seconds;
    }

    /// The series, in the text exposition format.
    pub(crate) fn render(&self) -> String {
        let c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        out.push_str("# HELP http_requests_total API requests by method, route and status.\n# TYPE http_requests_total counter\n");
        for ((m, r, s), n) in &c.requests {
            out.push_str(&format!(
                "http_requests_total{{method=\"{}\",route=\"{}\",status=\"{s}\"}} {n}\n",
                label(m),
                label(r)
            ));
        }
        out.push_str("# HELP http_request_duration_seconds API request duration by method and route.\n# TYPE http_request_duration_seconds summary\n");
        for ((m, r), (n, sum)) in &c.durations {
            let labels = format!("method=\"{}\",route=\"{}\"", label(m), label(r));
            out.push_str(&format!(
                "http_request_duration_seconds_count{{{labels}}} {n}\nhttp_request_duration_seconds_sum{{{labels}}} {sum}\n"
            ));
        }
        out
    }
}

/// A route layer: it sees the matched path template.
pub(crate) async fn record(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let started = Instant::now();
    let resp = next.run(req).await;
    if let Some(route) = route {
        let left_out =
            state.has(Defect::RedMissingRoute) && (method.as_str(), route.as_str()) == LEFT_OUT;
        if !left_out {
            state.red().record(
                &method,
                &route,
                resp.status().as_u16(),
                started.elapsed().as_secs_f64(),
            );
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_per_route_template_and_method() {
        let r = Red::default();
        r.record("GET", "/public/v1/contacts", 200, 0.01);
        r.record("GET", "/public/v1/contacts", 500, 0.02);
        r.record("POST", "/public/v1/scenarios/{id}/run", 202, 0.5);
        let text = r.render();
        assert!(text.contains(
            "http_requests_total{method=\"GET\",route=\"/public/v1/contacts\",status=\"500\"} 1\n"
        ));
        assert!(text.contains(
            "http_request_duration_seconds_count{method=\"GET\",route=\"/public/v1/contacts\"} 2\n"
        ));
        assert!(text.contains("route=\"/public/v1/scenarios/{id}/run\""));
    }
}
