//! OBS-003, `observability.red_metrics`: each route's request is sent (so
//! its series exist), then the target's `/metrics` page is read once and,
//! for each route, its rate series (the request counter with the route's
//! method and path template, carrying a status label for the errors, or a
//! separate error counter) and its duration series must be there. A route
//! without them fails, named; a page with no sample at all is an error
//! (the page is not the target's metrics).

use super::exec::send_traced;
use super::plan::{RedPlan, RoutePlan};
use crate::context::CheckContext;
use crate::http::Rendered;
use crate::model::expo::{read, Selector};
use crate::outcome::{prop, Assertion, Evidence, Outcome};

const PROPERTY: &str = "per_route";
/// The largest `/metrics` page read.
const MAX_PAGE: usize = 8 << 20;

fn selector(p: &RedPlan, name: &str, r: &RoutePlan, extra: Option<(&str, &str, bool)>) -> Selector {
    let mut matchers = vec![
        (p.method_label.clone(), r.method.clone(), true),
        (p.route_label.clone(), r.template.clone(), true),
    ];
    if let Some((k, v, eq)) = extra {
        matchers.push((k.to_owned(), v.to_owned(), eq));
    }
    Selector {
        name: name.to_owned(),
        matchers,
    }
}

/// The series a route lacks, each as its selector.
fn missing(p: &RedPlan, r: &RoutePlan, page: &str) -> Vec<String> {
    let show = |s: &Selector| {
        let labels: Vec<String> = s
            .matchers
            .iter()
            .map(|(k, v, eq)| format!("{k}{}\"{v}\"", if *eq { "=" } else { "!=" }))
            .collect();
        format!("{}{{{}}}", s.name, labels.join(","))
    };
    let mut wanted = vec![
        selector(p, &p.rate, r, None),
        selector(p, &p.duration, r, None),
    ];
    wanted.push(match &p.errors {
        Some(e) => selector(p, e, r, None),
        // A status label (any non-empty value) on the counter.
        None => selector(p, &p.rate, r, Some((&p.status_label, "", false))),
    });
    wanted
        .iter()
        .filter(|s| read(page, s).is_none())
        .map(show)
        .collect()
}

pub async fn run(p: &RedPlan, ctx: &CheckContext) -> Outcome {
    let mut evidence: Vec<Evidence> = Vec::new();
    for r in &p.routes {
        match send_traced(
            ctx,
            &r.request,
            &format!("{} {}", r.method, r.template),
            |_| {},
        )
        .await
        {
            Ok(s) => evidence.push(s.evidence),
            Err(o) => return o,
        }
    }
    let url = if p.metrics.starts_with('/') {
        format!("{}{}", ctx.target.base_url.trim_end_matches('/'), p.metrics)
    } else {
        p.metrics.clone()
    };
    let req = Rendered {
        method: reqwest::Method::GET,
        url: url.clone(),
        headers: Vec::new(),
        body: Vec::new(),
        timeout: std::time::Duration::from_secs(10),
        credential: None,
    };
    // The metrics page is the suite's instrument, not the API under test.
    let client = ctx.client.unwatched().with_max_body(MAX_PAGE);
    let ex = match client.send(&req).await {
        Ok(ex) => ex,
        Err(e) => return Outcome::transport("the metrics page", &e),
    };
    let shown = crate::redact::mask_userinfo(&url);
    if ex.status() != 200 {
        return Outcome::error(format!(
            "the metrics page {shown} answered {}: tminus cannot judge series it cannot read",
            ex.status()
        ));
    }
    let page = String::from_utf8_lossy(&ex.response.body);
    let samples = page
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .count();
    if samples == 0 {
        return Outcome::error(format!(
            "the metrics page {shown} holds no sample at all: it is not the target's Prometheus metrics"
        ));
    }
    let mut lacking = Vec::new();
    for r in &p.routes {
        let m = missing(p, r, &page);
        if !m.is_empty() {
            lacking.push(format!(
                "{} {}: no {}",
                r.method,
                r.template,
                m.join(", no ")
            ));
        }
    }
    let n = p.routes.len();
    let assertion = if lacking.is_empty() {
        Assertion::pass(
            PROPERTY,
            format!(
                "{n}/{n} routes have rate ({}), errors ({}) and duration ({}) series on {shown} ({samples} samples)",
                p.rate,
                p.errors
                    .clone()
                    .unwrap_or_else(|| format!("{} by `{}`", p.rate, p.status_label)),
                p.duration
            ),
        )
    } else {
        Assertion::fail(
            PROPERTY,
            format!(
                "{} of {n} routes tminus called have no RED series on {shown}: {}",
                lacking.len(),
                lacking.join("; ")
            ),
            "rate, errors and duration series for every route",
            format!("{} routes without", lacking.len()),
        )
    };
    Outcome::judged(vec![assertion])
        .with_evidence(evidence)
        .with_properties(vec![
            prop("routes", n as i64),
            prop("routes_without_series", lacking.len() as i64),
            prop("metrics_samples", samples as i64),
        ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{RequestPlan, UrlPlan};

    fn plan() -> RedPlan {
        let request = RequestPlan {
            method: reqwest::Method::GET,
            url: UrlPlan::Path(Default::default()),
            headers: Vec::new(),
            query: Vec::new(),
            body: crate::context::BodyPlan::None,
            timeout: None,
        };
        RedPlan {
            routes: vec![RoutePlan {
                method: "GET".into(),
                template: "/v1/things/{id}".into(),
                request,
            }],
            metrics: "/metrics".into(),
            rate: "http_requests_total".into(),
            duration: "http_request_duration_seconds_count".into(),
            status_label: "status".into(),
            errors: None,
            method_label: "method".into(),
            route_label: "route".into(),
        }
    }

    #[test]
    fn a_route_needs_rate_with_status_and_duration() {
        let p = plan();
        let full = "http_requests_total{method=\"GET\",route=\"/v1/things/{id}\",status=\"200\"} 3\nhttp_request_duration_seconds_count{method=\"GET\",route=\"/v1/things/{id}\"} 3\n";
        assert!(missing(&p, &p.routes[0], full).is_empty());
        let no_status = "http_requests_total{method=\"GET\",route=\"/v1/things/{id}\"} 3\nhttp_request_duration_seconds_count{method=\"GET\",route=\"/v1/things/{id}\"} 3\n";
        assert_eq!(
            missing(&p, &p.routes[0], no_status),
            ["http_requests_total{method=\"GET\",route=\"/v1/things/{id}\",status!=\"\"}"]
        );
        let other_route =
            "http_requests_total{method=\"GET\",route=\"/v1/other\",status=\"200\"} 3\n";
        assert_eq!(missing(&p, &p.routes[0], other_route).len(), 3);
    }
}
