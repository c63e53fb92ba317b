//! Plans of the transport kinds: specs validated, defaults applied.

use crate::context::request::RequestPlan;
use crate::context::PlanCtx;
use crate::families::transport::spec::TransportSpec;
use crate::model::scalar::StatusSet;

/// A planned `transport.*` check.
#[derive(Debug, Clone)]
pub enum TransportPlan {
    Certificate(CertificatePlan),
    Protocol(ProtocolPlan),
    Hsts(HstsPlan),
    Cors(CorsPlan),
    MtlsRequired(MtlsPlan),
    HttpsRedirect(HttpsRedirectPlan),
}

#[derive(Debug, Clone)]
pub struct HttpsRedirectPlan {
    pub path: String,
    pub http_url: Option<String>,
    pub refused_status: StatusSet,
}

#[derive(Debug, Clone)]
pub struct CertificatePlan {
    pub min_days: u64,
    pub min_rsa_bits: u64,
    pub min_ec_bits: u64,
}

#[derive(Debug, Clone)]
pub struct ProtocolPlan {
    pub legacy_probe: bool,
}

#[derive(Debug, Clone)]
pub struct HstsPlan {
    pub request: RequestPlan,
    pub min_max_age: u64,
}

#[derive(Debug, Clone)]
pub struct CorsPlan {
    pub request: RequestPlan,
    pub hostile_origin: String,
    pub allowed_origin: Option<String>,
    pub preflight: bool,
}

#[derive(Debug, Clone)]
pub struct MtlsPlan {
    pub request: RequestPlan,
    pub refused_status: StatusSet,
}

/// An origin as the Origin header carries it: scheme, host and optional
/// port, nothing else (RFC 6454 §7).
fn origin_problem(origin: &str) -> Option<String> {
    let url = match reqwest::Url::parse(origin) {
        Ok(u) => u,
        Err(e) => return Some(format!("`{origin}` is not an origin: {e}")),
    };
    let bare = url.path() == "/" && !origin.ends_with('/') && url.query().is_none();
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() || !bare {
        return Some(format!(
            "`{origin}` is not an origin (`https://host[:port]`, no path)"
        ));
    }
    None
}

pub fn plan(ctx: &mut PlanCtx<'_>, spec: &TransportSpec) -> TransportPlan {
    match spec {
        TransportSpec::Certificate(s) => {
            if s.min_rsa_bits < 1024 || s.min_ec_bits < 160 {
                ctx.error(
                    s.id.referenced,
                    "min_rsa_bits below 1024 or min_ec_bits below 160 accepts keys broken today",
                );
            }
            TransportPlan::Certificate(CertificatePlan {
                min_days: s.min_days,
                min_rsa_bits: s.min_rsa_bits,
                min_ec_bits: s.min_ec_bits,
            })
        }
        TransportSpec::Protocol(s) => TransportPlan::Protocol(ProtocolPlan {
            legacy_probe: s.legacy_probe,
        }),
        TransportSpec::Hsts(s) => {
            let request = ctx.request(&s.request, s.id.referenced);
            TransportPlan::Hsts(HstsPlan {
                request,
                min_max_age: s.min_max_age,
            })
        }
        TransportSpec::Cors(s) => {
            let at = s.id.referenced;
            let request = ctx.request(&s.request, at);
            for o in std::iter::once(&s.hostile_origin).chain(s.allowed_origin.as_ref()) {
                if let Some(why) = origin_problem(o) {
                    ctx.error(at, why);
                }
            }
            if s.allowed_origin.as_deref() == Some(s.hostile_origin.as_str()) {
                ctx.error(at, "allowed_origin and hostile_origin are the same origin");
            }
            TransportPlan::Cors(CorsPlan {
                request,
                hostile_origin: s.hostile_origin.clone(),
                allowed_origin: s.allowed_origin.clone(),
                preflight: s.preflight,
            })
        }
        TransportSpec::HttpsRedirect(s) => {
            let at = s.id.referenced;
            if !s.path.starts_with('/') || s.path.contains(char::is_whitespace) {
                ctx.error(
                    at,
                    format!("path `{}` must start with / and hold no spaces", s.path),
                );
            }
            // `${env.X}` and `${secret.X}` resolve here, as in base_url and
            // the proxy; an empty result (`${env.X:-}`) means "not given".
            let http_url = s.http_url.as_ref().and_then(|u| {
                let Some(text) = ctx.template_at(u, at).as_literal() else {
                    ctx.error(
                        at,
                        format!("http_url `{u}` takes ${{env.X}} and ${{secret.X}}, not values made per request"),
                    );
                    return None;
                };
                let text = text.trim().to_owned();
                if text.is_empty() {
                    return None;
                }
                let ok = reqwest::Url::parse(&text)
                    .is_ok_and(|u| u.scheme() == "http" && u.host_str().is_some());
                if !ok {
                    ctx.error(
                        at,
                        format!("http_url `{u}` is not an http:// URL with a host"),
                    );
                }
                Some(text)
            });
            TransportPlan::HttpsRedirect(HttpsRedirectPlan {
                path: s.path.clone(),
                http_url,
                refused_status: s.refused_status.clone(),
            })
        }
        TransportSpec::MtlsRequired(s) => {
            let request = ctx.request(&s.request, s.id.referenced);
            TransportPlan::MtlsRequired(MtlsPlan {
                request,
                refused_status: s.refused_status.clone(),
            })
        }
    }
}

impl TransportPlan {
    /// The most requests this check sends (`context::budget`): handshakes
    /// without a request are not requests.
    pub fn requests(&self) -> crate::context::budget::Requests {
        use crate::context::budget::Requests;
        match self {
            TransportPlan::Certificate(_) | TransportPlan::Protocol(_) => Requests::own(0),
            TransportPlan::Hsts(_) => Requests::own(1),
            // The path asked, and the root when they differ.
            TransportPlan::HttpsRedirect(_) => Requests::own(2),
            // Four hostile origins (the configured one, null, two look-alikes) and
            // the allowed one, each plain and preflighted.
            TransportPlan::Cors(_) => Requests::own(10),
            TransportPlan::MtlsRequired(_) => Requests::own(2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::origin_problem;

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        assert_eq!(origin_problem("https://app.example"), None);
        assert_eq!(origin_problem("http://127.0.0.1:8080"), None);
        assert!(origin_problem("https://app.example/path").is_some());
        assert!(origin_problem("https://app.example/").is_some());
        assert!(origin_problem("app.example").is_some());
        assert!(origin_problem("ftp://app.example").is_some());
    }
}
