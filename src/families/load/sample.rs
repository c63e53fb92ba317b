//! The burst's contract sample (issue 26): when the suite has a
//! `contract:`, the first responses of each request kind and the first few
//! of every error status it meets are kept whole and handed to the run's
//! observer (the contract watch), which judges them as it judges every
//! check's responses. The rest of the burst is not slowed: past the sample a
//! response costs one relaxed atomic load, and its body is dropped chunk by
//! chunk as before.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::http::{Observer, RecordedRequest, RecordedResponse};

/// Responses of each request kind judged from the burst's start.
pub const FIRST_PER_KIND: u32 = 20;
/// Responses of each error status (400–599) judged per request kind, at
/// any time of the burst: a 500 that only appears under load is drift too.
pub const PER_ERROR_STATUS: u32 = 5;
/// A sampled body is kept up to this size; a larger one is not judged (a
/// truncated body would read as a schema violation).
pub const MAX_BODY: usize = 1 << 20;

const ERROR_STATUSES: usize = 200;

/// Which responses to keep, and who judges them.
pub struct Sample {
    observer: Arc<dyn Observer>,
    /// Per kind: responses sampled from the start.
    first: Vec<AtomicU32>,
    /// Per kind, 200 counters for the statuses 400–599.
    errors: Vec<AtomicU32>,
}

impl Sample {
    pub fn new(observer: Arc<dyn Observer>, kinds: usize) -> Sample {
        Sample {
            observer,
            first: (0..kinds).map(|_| AtomicU32::new(0)).collect(),
            errors: (0..kinds * ERROR_STATUSES)
                .map(|_| AtomicU32::new(0))
                .collect(),
        }
    }

    /// Whether this response of `kind` is kept (claims its place if so).
    pub fn wants(&self, kind: usize, status: u16) -> bool {
        if let Some(c) = self.first.get(kind) {
            if claim(c, FIRST_PER_KIND) {
                return true;
            }
        }
        let i = usize::from(status).wrapping_sub(400);
        if i >= ERROR_STATUSES {
            return false;
        }
        self.errors
            .get(kind * ERROR_STATUSES + i)
            .is_some_and(|c| claim(c, PER_ERROR_STATUS))
    }

    /// Judges one kept response.
    pub fn judge(&self, request: &RecordedRequest, response: &RecordedResponse) {
        self.observer.response(request, response);
    }
}

/// Takes one of `limit` places; the load first keeps the common case (the
/// sample full) to one atomic read.
fn claim(c: &AtomicU32, limit: u32) -> bool {
    c.load(Ordering::Relaxed) < limit && c.fetch_add(1, Ordering::Relaxed) < limit
}

/// The response headers as the contract reads them (values that are not
/// visible ASCII are read lossily, as the probe's client does).
pub fn headers_of(map: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    map.iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Seen(Mutex<Vec<u16>>);
    impl Observer for Seen {
        fn response(&self, _: &RecordedRequest, r: &RecordedResponse) {
            self.0.lock().unwrap().push(r.status);
        }
    }

    #[test]
    fn the_first_of_each_kind_and_a_few_of_each_error_status_are_kept() {
        let s = Sample::new(Arc::new(Seen::default()), 2);
        let kept = |kind, status, n| (0..n).filter(|_| s.wants(kind, status)).count();
        assert_eq!(kept(0, 200, 100), FIRST_PER_KIND as usize);
        assert_eq!(kept(0, 200, 10), 0, "the sample is full");
        assert_eq!(kept(0, 500, 100), PER_ERROR_STATUS as usize);
        assert_eq!(kept(0, 503, 100), PER_ERROR_STATUS as usize, "per status");
        assert_eq!(kept(0, 600, 10), 0);
        assert_eq!(kept(0, 399, 10), 0);
        // Another kind has its own places; an unknown kind none past errors.
        assert_eq!(kept(1, 201, 100), FIRST_PER_KIND as usize);
        assert_eq!(kept(7, 200, 10), 0);
    }
}
