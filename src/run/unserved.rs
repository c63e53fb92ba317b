//! Stops a suite that does not fit its target (issue 37): when the first
//! answers of a run say that the suite's routes are not served (every one a
//! 404 or 405), the checks still to come (storms, uniqueness samples, the
//! burst) would each fail or err on the same 404s, spend thousands of
//! requests and bury the cause under a page of failures. The runner stops
//! the suite instead, with one error that names the missing routes and the
//! way out (`--target` with the right base path, `tminus init
//! --from-openapi`).
//!
//! The rule is deliberately one-sided: a single answer of any other status
//! (2xx, 3xx, 401, 422, 429, 5xx...) proves that some route of the suite is
//! served, and disarms it for the rest of the suite. It decides "not
//! served" when nothing else was answered yet and either [`MIN_ANSWERS`]
//! answers came from at least [`MIN_ROUTES`] distinct routes, or
//! [`MIN_ANSWERS_ONE_ROUTE`] from one route (a storm), or [`MIN_CHECKS`]
//! checks in a row were answered, all with 404/405. The price: a suite
//! whose first checks all ask for missing resources on purpose is
//! stopped; put a check that reaches a served route first (a GET of a
//! list, a health route). That is an error that names itself, never a
//! wrong verdict.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::http::{Observer, RecordedRequest, RecordedResponse};

/// Answers needed before "not served" is decided over several routes.
pub const MIN_ANSWERS: u32 = 4;
/// Distinct routes (method and path) those answers must come from.
pub const MIN_ROUTES: usize = 2;
/// Answers needed when the suite reached fewer than [`MIN_ROUTES`] routes.
pub const MIN_ANSWERS_ONE_ROUTE: u32 = 20;
/// Checks in a row, each answered and only with 404/405, that decide it
/// whatever the routes (checks that stop at their first 404, such as a
/// side-effect counter read, send one request each).
pub const MIN_CHECKS: u32 = 3;
/// Missing routes quoted in the error.
const QUOTED: usize = 4;

/// Watches one suite's answers; passes each on to the inner observer (the
/// contract watch) unchanged.
pub struct Unserved {
    inner: Option<Arc<dyn Observer>>,
    state: Mutex<State>,
    decided: Notify,
}

#[derive(Default)]
struct State {
    /// Some route answered with something else than 404/405.
    served: bool,
    answers: u32,
    /// `answers` when the current check started.
    answers_at_check_start: u32,
    /// Checks that finished with answers, all 404/405.
    checks: u32,
    /// "METHOD /path" → (answers, last status).
    routes: BTreeMap<String, (u32, u16)>,
    /// The error, once decided.
    verdict: Option<String>,
}

impl Unserved {
    pub fn new(inner: Option<Arc<dyn Observer>>) -> Unserved {
        Unserved {
            inner,
            state: Mutex::new(State::default()),
            decided: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The error, if the suite's routes were found not served.
    pub fn verdict(&self) -> Option<String> {
        self.lock().verdict.clone()
    }

    /// Resolves once the routes are found not served (at once if they
    /// already were).
    pub async fn decided(&self) {
        loop {
            let notified = self.decided.notified();
            if self.verdict().is_some() {
                return;
            }
            notified.await;
        }
    }

    /// The current check ended: one more check answered only with
    /// 404/405, if it was answered at all.
    pub fn check_finished(&self) {
        let mut s = self.lock();
        if s.served || s.verdict.is_some() {
            return;
        }
        if s.answers > s.answers_at_check_start {
            s.checks += 1;
        }
        s.answers_at_check_start = s.answers;
        if s.checks >= MIN_CHECKS {
            s.verdict = Some(message(s.answers, &s.routes));
            drop(s);
            self.decided.notify_waiters();
        }
    }

    fn count(&self, method: &str, url: &str, status: u16) {
        let mut s = self.lock();
        if s.served || s.verdict.is_some() {
            return;
        }
        if !matches!(status, 404 | 405) {
            s.served = true;
            s.routes.clear();
            return;
        }
        s.answers += 1;
        let route = format!("{method} {}", path_of(url));
        let e = s.routes.entry(route).or_insert((0, status));
        e.0 += 1;
        e.1 = status;
        let enough = (s.routes.len() >= MIN_ROUTES && s.answers >= MIN_ANSWERS)
            || s.answers >= MIN_ANSWERS_ONE_ROUTE;
        if enough {
            s.verdict = Some(message(s.answers, &s.routes));
            drop(s);
            self.decided.notify_waiters();
        }
    }
}

impl Observer for Unserved {
    fn response(&self, request: &RecordedRequest, response: &RecordedResponse) {
        self.count(&request.method, &request.url, response.status);
        if let Some(o) = &self.inner {
            o.response(request, response);
        }
    }
}

/// The path of a URL, without query or fragment.
fn path_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => u.path().to_owned(),
        Err(_) => url.split(['?', '#']).next().unwrap_or(url).to_owned(),
    }
}

fn message(answers: u32, routes: &BTreeMap<String, (u32, u16)>) -> String {
    let mut quoted: Vec<String> = routes
        .iter()
        .take(QUOTED)
        .map(|(route, (n, status))| format!("{route} → {status} ({n}×)"))
        .collect();
    if routes.len() > QUOTED {
        quoted.push(format!("and {} more", routes.len() - QUOTED));
    }
    format!(
        "the target does not serve this suite's routes: all {answers} answers so far were 404 or \
         405 ({}); the suite may have been written for another API, or the target's base path is \
         wrong (--target must include any path prefix, e.g. https://host/api). The suite was \
         stopped before its remaining checks. Write a suite for your API with \
         `tminus init --from-openapi openapi.json`",
        quoted.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(u: &Unserved, method: &str, path: &str, status: u16) {
        u.count(method, &format!("http://127.0.0.1:1{path}?q=1"), status);
    }

    #[test]
    fn decides_after_enough_404s_over_several_routes() {
        let u = Unserved::new(None);
        for i in 0..MIN_ANSWERS {
            assert!(u.verdict().is_none(), "decided after {i}");
            let path = ["/a", "/b"][i as usize % 2];
            answer(&u, "GET", path, 404);
        }
        let v = u.verdict().expect("decided");
        assert!(v.contains("GET /a → 404 (2×)"), "{v}");
        assert!(v.contains("init --from-openapi"), "{v}");
    }

    #[test]
    fn one_served_answer_disarms_it_for_good() {
        let u = Unserved::new(None);
        answer(&u, "GET", "/a", 404);
        answer(&u, "GET", "/b", 401);
        for _ in 0..100 {
            answer(&u, "POST", "/c", 404);
            answer(&u, "GET", "/d", 405);
        }
        assert!(u.verdict().is_none());
    }

    #[test]
    fn a_single_route_needs_more_answers() {
        let u = Unserved::new(None);
        for _ in 0..MIN_ANSWERS_ONE_ROUTE - 1 {
            answer(&u, "POST", "/orders", 404);
        }
        assert!(u.verdict().is_none());
        answer(&u, "POST", "/orders", 404);
        assert!(u.verdict().is_some());
    }

    #[test]
    fn three_checks_answered_only_with_404_decide_it() {
        let u = Unserved::new(None);
        u.check_finished(); // a check that sent nothing does not count
        for i in 0..MIN_CHECKS {
            assert!(u.verdict().is_none(), "decided after {i} checks");
            answer(&u, "GET", "/count", 404);
            u.check_finished();
        }
        assert!(u.verdict().is_some());
    }

    #[tokio::test]
    async fn waiters_wake_when_it_decides() {
        let u = Arc::new(Unserved::new(None));
        let waiter = tokio::spawn({
            let u = u.clone();
            async move { u.decided().await }
        });
        tokio::task::yield_now().await;
        for _ in 0..MIN_ANSWERS_ONE_ROUTE {
            answer(&u, "GET", "/x", 404);
        }
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .unwrap();
    }
}
