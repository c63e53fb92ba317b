//! Sending `n` copies of one request at the same instant, for
//! `idempotency.concurrent`: a target whose key check and key reservation
//! are not atomic (read the key, then insert it, with a window `w` between)
//! executes twice only when two requests arrive within `w` of each other, so
//! the tighter the copies arrive, the smaller the race window the check can
//! catch (`race.rs` holds the model and its rates).
//!
//! Every connection is opened first (TCP connect, for `https://` the TLS
//! handshake with the probe's trust and client certificate, and the HTTP/1.1
//! handshake; one connection per copy, all concurrently), and only when all
//! are ready are the requests handed to them, in one tight loop that does
//! nothing else: the copies leave within microseconds of each other instead
//! of after `n` connection set-ups that finish at different times. Over TLS
//! each copy is encrypted as it is handed over, which adds microseconds per
//! copy to the spread; the rates in the README are measured over `http://`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

use crate::http::stream::{self, Origin};
use crate::http::{
    body_over_cap, header_pairs, Client, Exchange, RecordedRequest, RecordedResponse, Rendered,
    TransportError,
};

/// The connect timeout of the pre-opened connections (the probe client's).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How the copies were released, for the check's notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// One pre-opened HTTP/1.1 connection per copy, requests handed over at once.
    PreOpened,
    /// Through the probe's pooled client (a URL tminus cannot dial itself).
    Pooled,
}

/// Sends `n` copies of `req` at once; one result per copy, in order.
pub async fn send_together(
    client: &Client,
    req: &Rendered,
    n: usize,
) -> (Release, Vec<Result<Exchange, TransportError>>) {
    match reqwest::Url::parse(&req.url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => {
            let results = pre_opened(&url, req, n, client.max_body()).await;
            // Sent beside the client: its watchers (a suite's contract) are
            // told here.
            for ex in results.iter().flatten() {
                client.observe(ex);
            }
            (Release::PreOpened, results)
        }
        _ => {
            let sends = (0..n).map(|_| client.send(req));
            (Release::Pooled, futures::future::join_all(sends).await)
        }
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Opens one HTTP/1.1 connection to `origin` and starts driving it.
async fn open(origin: &Origin) -> Result<Sender, String> {
    let stream = stream::open(origin, CONNECT_TIMEOUT).await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    Ok(sender)
}

async fn pre_opened(
    url: &reqwest::Url,
    req: &Rendered,
    n: usize,
    max_body: usize,
) -> Vec<Result<Exchange, TransportError>> {
    let recorded = RecordedRequest::capture(req);
    let host = url.host_str().unwrap_or_default();
    let origin = match Origin::of(url) {
        Ok(o) => o,
        Err(reason) => {
            return (0..n)
                .map(|_| {
                    Err(TransportError::Other {
                        request: recorded.line(),
                        reason: reason.clone(),
                    })
                })
                .collect()
        }
    };
    let addr = origin.addr.clone();
    let authority = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    };
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    // Nothing has been sent when a connection fails: the failure is every
    // copy's.
    let failed = |reason: String| -> Vec<Result<Exchange, TransportError>> {
        (0..n)
            .map(|_| {
                Err(TransportError::Connect {
                    request: recorded.line(),
                    address: addr.clone(),
                    reason: reason.clone(),
                })
            })
            .collect()
    };
    let mut senders = Vec::with_capacity(n);
    for o in futures::future::join_all((0..n).map(|_| open(&origin))).await {
        match o {
            Ok(s) => senders.push(s),
            Err(reason) => return failed(reason),
        }
    }
    // Every connection ready to take a request before any is handed one.
    let ready = async {
        for s in &mut senders {
            s.ready().await.map_err(|e| e.to_string())?;
        }
        Ok::<_, String>(())
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, ready).await {
        Ok(Ok(())) => {}
        Ok(Err(reason)) => return failed(reason),
        Err(_) => return failed(format!("not ready within {CONNECT_TIMEOUT:?}")),
    }
    let body = Bytes::from(req.body.clone());
    let requests: Vec<_> = (0..n)
        .map(|_| build(req, &authority, &path, &body))
        .collect();
    let recorded = Arc::new(recorded);
    // The release: `send_request` queues the request on its connection
    // synchronously, so this loop hands all `n` over back to back.
    let started = Instant::now();
    let pending: Vec<_> = senders
        .iter_mut()
        .zip(requests)
        .map(|(s, r)| match r {
            Ok(r) => Ok(s.send_request(r)),
            Err(e) => Err(e),
        })
        .collect();
    let exchanges = pending.into_iter().map(|p| {
        let recorded = Arc::clone(&recorded);
        async move {
            let line = recorded.line();
            let other = |reason: String| TransportError::Other {
                request: line.clone(),
                reason,
            };
            let fut = async {
                let resp = p.map_err(&other)?.await.map_err(|e| other(e.to_string()))?;
                let ttfb = started.elapsed();
                let status = resp.status().as_u16();
                let headers = header_pairs(resp.headers());
                let mut incoming = resp.into_body();
                let mut body = Vec::new();
                while let Some(frame) = incoming.frame().await {
                    let frame = frame.map_err(|e| other(e.to_string()))?;
                    if let Some(chunk) = frame.data_ref() {
                        if body.len() + chunk.len() > max_body {
                            return Err(other(body_over_cap(max_body)));
                        }
                        body.extend_from_slice(chunk);
                    }
                }
                Ok(Exchange {
                    request: (*recorded).clone(),
                    response: RecordedResponse {
                        status,
                        headers,
                        body,
                    },
                    elapsed: started.elapsed(),
                    ttfb,
                })
            };
            match tokio::time::timeout(req.timeout, fut).await {
                Ok(r) => r,
                Err(_) => Err(TransportError::Timeout {
                    request: line.clone(),
                    after: req.timeout,
                }),
            }
        }
    });
    futures::future::join_all(exchanges).await
}

/// The HTTP/1.1 request of one copy: the rendered headers plus `Host`,
/// `Content-Length` and the probe's `User-Agent` (what the probe's client
/// would add).
fn build(
    req: &Rendered,
    authority: &str,
    path: &str,
    body: &Bytes,
) -> Result<hyper::Request<Full<Bytes>>, String> {
    let mut b = hyper::Request::builder()
        .method(req.method.as_str())
        .uri(path)
        .header("host", authority);
    for (k, v) in &req.headers {
        if k.eq_ignore_ascii_case("host") || k.eq_ignore_ascii_case("content-length") {
            continue;
        }
        b = b.header(k.as_str(), v.as_str());
    }
    if req.header("user-agent").is_none() {
        b = b.header("user-agent", concat!("tminus/", env!("CARGO_PKG_VERSION")));
    }
    if !body.is_empty() || req.method != reqwest::Method::GET {
        b = b.header("content-length", body.len());
    }
    b.body(Full::new(body.clone()))
        .map_err(|e| format!("cannot build the request: {e}"))
}

#[cfg(test)]
mod tests {
    //! The release against a local server that notes when and on which
    //! connection each request reached its handler. The arrival spread is
    //! printed (what the README's model is built on), never asserted: speed
    //! is measured, not tested.

    use super::*;
    use std::net::SocketAddr;
    use std::sync::Mutex;

    use axum::extract::{ConnectInfo, State};
    use axum::routing::post;

    type Arrivals = Arc<Mutex<Vec<(Instant, SocketAddr, usize)>>>;

    async fn server() -> (String, Arrivals) {
        let arrivals: Arrivals = Arc::default();
        let app = axum::Router::new()
            .route(
                "/m",
                post(
                    |State(a): State<Arrivals>,
                     ConnectInfo(peer): ConnectInfo<SocketAddr>,
                     body: Bytes| async move {
                        a.lock().unwrap().push((Instant::now(), peer, body.len()));
                        (axum::http::StatusCode::CREATED, "{\"ok\":true}")
                    },
                ),
            )
            .with_state(arrivals.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
        });
        (format!("http://{addr}"), arrivals)
    }

    fn request(base: &str) -> Rendered {
        Rendered {
            method: reqwest::Method::POST,
            url: format!("{base}/m"),
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("Idempotency-Key".into(), "k1".into()),
            ],
            body: br#"{"text":"race"}"#.to_vec(),
            timeout: Duration::from_secs(5),
            credential: None,
        }
    }

    /// Per release of `n`: (last arrival − first, second − first), in µs,
    /// over `rounds` releases.
    async fn spreads(
        base: &str,
        arrivals: &Arrivals,
        rounds: usize,
        n: usize,
        pooled: bool,
    ) -> (Vec<u128>, Vec<u128>) {
        let client = Client::new().unwrap();
        let req = request(base);
        let (mut spread, mut first_gap) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            arrivals.lock().unwrap().clear();
            let results = if pooled {
                // The release before this module: one future per copy on
                // the pooled client, connections opened on demand.
                futures::future::join_all((0..n).map(|_| client.send(&req))).await
            } else {
                send_together(&client, &req, n).await.1
            };
            assert!(results.iter().all(|r| r.as_ref().unwrap().status() == 201));
            let mut at: Vec<Instant> = arrivals.lock().unwrap().iter().map(|x| x.0).collect();
            at.sort_unstable();
            spread.push((at[n - 1] - at[0]).as_micros());
            first_gap.push((at[1] - at[0]).as_micros());
        }
        spread.sort_unstable();
        first_gap.sort_unstable();
        (spread, first_gap)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_copy_arrives_whole_on_its_own_connection() {
        let (base, arrivals) = server().await;
        let client = Client::new().unwrap();
        let req = request(&base);
        let (release, results) = send_together(&client, &req, 10).await;
        assert_eq!(release, Release::PreOpened);
        assert_eq!(results.len(), 10);
        for r in &results {
            let ex = r.as_ref().unwrap();
            assert_eq!(ex.status(), 201);
            assert_eq!(ex.response.body, b"{\"ok\":true}");
            assert_eq!(ex.request.header("idempotency-key"), Some("k1"));
        }
        let a = arrivals.lock().unwrap();
        assert_eq!(a.len(), 10);
        assert!(a.iter().all(|x| x.2 == req.body.len()), "whole bodies");
        let mut peers: Vec<_> = a.iter().map(|x| x.1).collect();
        peers.sort();
        peers.dedup();
        assert_eq!(peers.len(), 10, "one connection per copy");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unreachable_target_is_a_connect_error_for_every_copy() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let client = Client::new().unwrap();
        let (_, results) = send_together(&client, &request(&base), 3).await;
        assert_eq!(results.len(), 3);
        for r in results {
            assert!(
                matches!(r, Err(TransportError::Connect { ref address, .. }) if base.ends_with(address.as_str())),
                "{r:?}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn arrival_spread_is_printed_for_the_model() {
        let (base, arrivals) = server().await;
        let rounds = 200;
        let q = |v: &[u128], p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        let show = |v: &[u128]| {
            format!(
                "min {} p10 {} median {} p90 {} p99 {} max {}",
                v[0],
                q(v, 0.1),
                q(v, 0.5),
                q(v, 0.9),
                q(v, 0.99),
                v[v.len() - 1]
            )
        };
        for (name, pooled) in [("pre-opened", false), ("pooled, on demand", true)] {
            let (spread, first_gap) = spreads(&base, &arrivals, rounds, 10, pooled).await;
            assert_eq!(spread.len(), rounds);
            eprintln!(
                "10 copies, {name}, {rounds} rounds (µs): last − first arrival {}; second − first {}",
                show(&spread),
                show(&first_gap)
            );
        }
    }
}
