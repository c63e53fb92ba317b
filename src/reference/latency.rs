//! Artificial latency for `/public/v1/*`, so timeout and load checks have something
//! slow to measure. Applied as the outermost public route layer, so 401s wait too.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::defect::Defect;
use super::state::AppState;

pub(crate) async fn delay(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let latency = state.config().latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    // The `stall` defect (load family).
    if state.has(Defect::Stall) {
        let every = state.config().stall_every.max(1);
        if state.next_request_number() % every == 0 {
            tokio::time::sleep(state.config().stall_for).await;
        }
    }

    next.run(req).await
}
