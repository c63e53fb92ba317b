//! A server tminus runs beside a check (the mock upstream, the dependency
//! double): its task, stopped gracefully on request and aborted when
//! dropped, so no listener outlives its check.

use std::future::Future;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long [`ServeTask::shutdown`] lets open requests finish.
const GRACE: Duration = Duration::from_secs(1);

pub struct ServeTask {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl ServeTask {
    /// Spawns `serve`, which must return once its receiver fires (axum's
    /// `with_graceful_shutdown`).
    pub fn spawn<F, Fut>(serve: F) -> ServeTask
    where
        F: FnOnce(oneshot::Receiver<()>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (stop, stop_rx) = oneshot::channel();
        ServeTask {
            stop: Some(stop),
            task: Some(tokio::spawn(serve(stop_rx))),
        }
    }

    /// Stops serving; what is still open after [`GRACE`] is aborted.
    pub async fn shutdown(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(mut t) = self.task.take() {
            if tokio::time::timeout(GRACE, &mut t).await.is_err() {
                t.abort();
            }
        }
    }
}

impl Drop for ServeTask {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}
