//! `GET /metrics`: the reference's own signals in Prometheus' text
//! exposition format (version 0.0.4), so `load.observe` can be tested
//! against a real Prometheus scraping a target whose pools and queues
//! really move (issue 27 part 3).
//!
//! Counted in the latency middleware (`latency.rs`), around every
//! `/public/v1/*` request:
//! - `tminus_reference_in_flight_requests`: requests inside the API
//!   (waiting or being served);
//! - `tminus_reference_queue_depth`: requests waiting for a worker
//!   (`--max-concurrency`) or for the end of a `stall` pause;
//! - `tminus_reference_pool_in_use` / `tminus_reference_pool_size`:
//!   workers holding a request, and how many there are (size 0: no limit);
//! - `tminus_reference_requests_total`: API requests seen.
//!
//! Beside them, per-route RED series (`red.rs`): `http_requests_total`
//! and `http_request_duration_seconds`.
//!
//! The gauges move through guards, so a request whose client went away (its
//! future dropped while it waited) leaves them as it found them.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::state::AppState;

/// The content type Prometheus expects of a text exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The counters behind `/metrics`.
#[derive(Default)]
pub(crate) struct Metrics {
    in_flight: AtomicI64,
    queued: AtomicI64,
    in_service: AtomicI64,
    requests: AtomicU64,
}

/// Holds one unit of a gauge until dropped.
pub(crate) struct Held<'a>(&'a AtomicI64);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn hold(g: &AtomicI64) -> Held<'_> {
    g.fetch_add(1, Ordering::Relaxed);
    Held(g)
}

impl Metrics {
    /// A request entered the API: counted, and in flight until dropped.
    pub(crate) fn arrived(&self) -> Held<'_> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        hold(&self.in_flight)
    }
    /// Waiting (for a worker, for a pause to end) until dropped.
    pub(crate) fn waiting(&self) -> Held<'_> {
        hold(&self.queued)
    }
    /// Holding a worker until dropped.
    pub(crate) fn serving(&self) -> Held<'_> {
        hold(&self.in_service)
    }

    /// The exposition text; `pool_size` 0 when no limit is set.
    pub(crate) fn render(&self, pool_size: usize) -> String {
        let g = |a: &AtomicI64| a.load(Ordering::Relaxed).max(0);
        let mut out = String::with_capacity(1024);
        let mut metric = |name: &str, kind: &str, help: &str, value: String| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
            ));
        };
        metric(
            "tminus_reference_in_flight_requests",
            "gauge",
            "API requests inside the server, waiting or being served.",
            g(&self.in_flight).to_string(),
        );
        metric(
            "tminus_reference_queue_depth",
            "gauge",
            "API requests waiting for a worker or for a stall to end.",
            g(&self.queued).to_string(),
        );
        metric(
            "tminus_reference_pool_in_use",
            "gauge",
            "Workers serving a request (with --max-concurrency; else requests past the queue).",
            g(&self.in_service).to_string(),
        );
        metric(
            "tminus_reference_pool_size",
            "gauge",
            "Workers in the pool (--max-concurrency); 0 when there is no limit.",
            pool_size.to_string(),
        );
        metric(
            "tminus_reference_requests_total",
            "counter",
            "API requests received.",
            self.requests.load(Ordering::Relaxed).to_string(),
        );
        out
    }
}

/// `GET /metrics` (no auth, as Prometheus scrapes it).
pub(crate) async fn serve(State(state): State<AppState>) -> impl IntoResponse {
    let size = state.config().max_concurrency.unwrap_or(0);
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        format!("{}{}", state.metrics().render(size), state.red().render()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_move_the_gauges_and_put_them_back() {
        let m = Metrics::default();
        {
            let _a = m.arrived();
            let _w = m.waiting();
            let text = m.render(4);
            assert!(text.contains("\ntminus_reference_in_flight_requests 1\n"));
            assert!(text.contains("\ntminus_reference_queue_depth 1\n"));
            assert!(text.contains("\ntminus_reference_pool_size 4\n"));
        }
        let _s = m.serving();
        let text = m.render(0);
        assert!(text.contains("\ntminus_reference_in_flight_requests 0\n"));
        assert!(text.contains("\ntminus_reference_queue_depth 0\n"));
        assert!(text.contains("\ntminus_reference_pool_in_use 1\n"));
        assert!(text.contains("\ntminus_reference_requests_total 1\n"));
        assert!(text.contains("# TYPE tminus_reference_requests_total counter\n"));
    }
}
