//! Artificial latency for `/public/v1/*`, so timeout and load checks have something
//! slow to measure. Applied as the outermost public route layer, so 401s wait too.
//!
//! Two ways to make the API queue, so the burst can tell a target's own
//! saturation from a harness that opened too few users:
//! - `max_concurrency` (`tminus reference --max-concurrency N`): at most N requests
//!   are served at once, the rest wait in arrival order, as behind a fixed pool of
//!   workers; beyond `N / latency` requests a second the queue grows.
//! - the `stall` defect: every Nth request pauses the whole API for `stall_for`
//!   (a stop-the-world pause: a GC pause, a lock held across a slow call). Requests
//!   that arrive meanwhile wait for it to end and do not count towards the next
//!   one. A stall of one request alone would not do: an open-arrival burst simply
//!   sends the next requests on other users, so nothing queues behind it.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::defect::Defect;
use super::state::AppState;

pub(crate) async fn delay(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let metrics = state.metrics();
    let _in_flight = metrics.arrived();
    // Held until the response is built: the slot is the request's whole service.
    let _worker = match state.workers() {
        Some(w) => {
            let waiting = metrics.waiting();
            let permit = w.acquire().await.ok();
            drop(waiting);
            permit
        }
        None => None,
    };
    // The `stall` defect (load family).
    if state.has(Defect::Stall) {
        let pause = state.pause();
        match pause.try_read() {
            Ok(free) => {
                drop(free);
                let every = state.config().stall_every.max(1);
                if state.next_request_number() % every == 0 {
                    let held = pause.write().await;
                    tokio::time::sleep(state.config().stall_for).await;
                    drop(held);
                }
            }
            // A pause is on: wait for its end (fair lock: behind the writer).
            Err(_) => {
                let _waiting = metrics.waiting();
                drop(pause.read().await)
            }
        }
    }
    let serving = metrics.serving();
    // The `pool-leak` defect: the slot is never given back (what a
    // connection not returned to its pool looks like from /metrics); the
    // answer is as fast as ever, so only the pool's gauge shows it.
    if state.has(Defect::PoolLeak) {
        std::mem::forget(serving);
    }
    let latency = state.config().latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }

    next.run(req).await
}
