//! Planning `auth.sandbox_isolated`: the probes checked to be paths (they
//! go to two environments) and read-only unless production writes are
//! allowed, production's base URL, credential and counter compiled.

use super::spec::{AuthSpec, SandboxIsolatedSpec};
use crate::context::{check_base_url, CounterPlan, PlanCtx, RequestPlan, Template};

/// The most probes one check sends (each goes to both environments).
pub const MAX_PROBES: usize = 20;

/// Production as the check sees it.
#[derive(Debug, Clone)]
pub struct ProductionPlan {
    /// `None`: the embedded reference's production twin.
    pub base_url: Option<String>,
    /// Production's own credential, when the suite gives one.
    pub headers: Option<Vec<(String, Template)>>,
    /// Production's side-effect counter (a GET, relative to its base URL).
    pub effects: Option<CounterPlan>,
}

#[derive(Debug, Clone)]
pub struct SandboxIsolatedPlan {
    pub probes: Vec<RequestPlan>,
    pub production: ProductionPlan,
    pub allow_production_writes: bool,
}

/// A planned `auth.*` check.
#[derive(Debug, Clone)]
pub enum AuthPlan {
    SandboxIsolated(SandboxIsolatedPlan),
}

/// True for the methods that only read (RFC 9110 §9.2.1 safe methods tminus
/// sends): everything else may write, and goes to production only when the
/// suite allows it.
pub fn is_read_only(m: &reqwest::Method) -> bool {
    *m == reqwest::Method::GET || *m == reqwest::Method::HEAD
}

pub fn plan(ctx: &mut PlanCtx<'_>, spec: &AuthSpec) -> AuthPlan {
    match spec {
        AuthSpec::SandboxIsolated(s) => AuthPlan::SandboxIsolated(sandbox_isolated(ctx, s)),
    }
}

fn sandbox_isolated(ctx: &mut PlanCtx<'_>, s: &SandboxIsolatedSpec) -> SandboxIsolatedPlan {
    let at = s.id.referenced;
    if s.probes.is_empty() || s.probes.len() > MAX_PROBES {
        ctx.error(
            at,
            format!(
                "probes must hold 1 to {MAX_PROBES} requests, got {}",
                s.probes.len()
            ),
        );
    }
    let mut probes = Vec::new();
    for r in &s.probes {
        let p = ctx.request(r, at);
        if let Some(u) = &r.url {
            ctx.error(
                u.referenced,
                "a probe goes to both environments: give it a `path`, not an absolute `url`",
            );
        }
        if !s.allow_production_writes && !is_read_only(&p.method) {
            let where_ = r.method.as_ref().map_or(at, |m| m.referenced);
            ctx.error(
                where_,
                format!(
                    "a {} probe could write to production: production gets only GET or HEAD probes unless the check says `allow_production_writes: true`",
                    p.method
                ),
            );
        }
        probes.push(p);
    }
    let prod = &s.production;
    let mut base_url = None;
    if let Some(b) = &prod.base_url {
        let t = ctx.template(b);
        match t.as_literal() {
            Some(text) => {
                let text = text.trim().trim_end_matches('/').to_owned();
                if !text.is_empty() {
                    ctx.redactor.add_userinfo(&text);
                    if let Err(e) = check_base_url(&text) {
                        let shown = crate::redact::mask_userinfo(&text);
                        ctx.error(b.referenced, format!("production.base_url `{shown}` {e}"));
                    }
                    base_url = Some(text);
                }
            }
            None => ctx.error(
                b.referenced,
                "production.base_url cannot use `${uuid}`/`${ulid}`: give it a fixed value",
            ),
        }
    }
    let headers = prod.headers.as_ref().map(|h| {
        if h.is_empty() {
            ctx.error(
                at,
                "production.headers is empty: give production's credential, or leave it out",
            );
        }
        h.iter().map(|(k, v)| ctx.header(k, v)).collect()
    });
    let effects = prod.effects.as_ref().map(|c| {
        let planned = ctx.counter(c);
        if let Some(u) = &c.request.url {
            ctx.error(
                u.referenced,
                "production.effects is read on production: give its request a `path`, not an absolute `url`",
            );
        }
        if !is_read_only(&planned.request.method) {
            let where_ = c.request.method.as_ref().map_or(at, |m| m.referenced);
            ctx.error(
                where_,
                format!(
                    "production.effects is read with {}: a counter is read with GET",
                    planned.request.method
                ),
            );
        }
        planned
    });
    SandboxIsolatedPlan {
        probes,
        production: ProductionPlan {
            base_url,
            headers,
            effects,
        },
        allow_production_writes: s.allow_production_writes,
    }
}

impl AuthPlan {
    /// Requests of the suite's credential on its target (the sandbox): one
    /// per probe. What goes to production is another origin's, and the
    /// production credential is not the suite's.
    pub fn requests(&self) -> crate::context::budget::Requests {
        use crate::context::budget::Requests;
        match self {
            AuthPlan::SandboxIsolated(p) => Requests::own(p.probes.len() as u64),
        }
    }

    /// True when the check goes to the embedded reference's production
    /// twin (no `production.base_url`).
    pub fn needs_production_twin(&self) -> bool {
        match self {
            AuthPlan::SandboxIsolated(p) => p.production.base_url.is_none(),
        }
    }
}
