//! Runs a `transport.*` check: what the TLS layer says (`tls_probe`) or
//! what the https answers' headers say (`headers`). A target that is not
//! served over https fails `https`, and whatever rests on TLS is skipped:
//! it has no transport security to judge, which is the finding.

use super::{headers, redirect, tls_probe};
use crate::context::CheckContext;
use crate::families::transport::plan::TransportPlan;
use crate::http::stream::Origin;
use crate::outcome::{Assertion, Outcome};

pub async fn run(plan: &TransportPlan, ctx: &CheckContext) -> Outcome {
    match plan {
        TransportPlan::Certificate(p) => tls_probe::certificate(p, ctx).await,
        TransportPlan::Protocol(p) => tls_probe::protocol(p, ctx).await,
        TransportPlan::Hsts(p) => headers::hsts(p, ctx).await,
        TransportPlan::Cors(p) => headers::cors(p, ctx).await,
        TransportPlan::MtlsRequired(p) => tls_probe::mtls_required(p, ctx).await,
        TransportPlan::HttpsRedirect(p) => redirect::https_redirect(p, ctx).await,
    }
}

/// The target's origin when it is https; else the outcome that says it is
/// not, with the properties that rest on TLS skipped.
pub fn https_origin(ctx: &CheckContext, rest: &[&'static str]) -> Result<Origin, Box<Outcome>> {
    let url = reqwest::Url::parse(&ctx.target.base_url).map_err(|e| {
        Outcome::error(format!(
            "the target `{}` is not a URL: {e}",
            ctx.target.base_url
        ))
    })?;
    if url.scheme() != "https" {
        let shown = crate::redact::mask_userinfo(&ctx.target.base_url);
        let mut a = vec![Assertion::fail(
            "https",
            format!("the target {shown} is served over plain http: no transport security at all"),
            "https://",
            format!("{}://", url.scheme()),
        )];
        a.extend(
            rest.iter()
                .map(|p| Assertion::skipped(p, "the target is not https (see https)")),
        );
        return Err(Box::new(Outcome::judged(a)));
    }
    Origin::of(&url).map_err(|e| Box::new(Outcome::error(e)))
}
