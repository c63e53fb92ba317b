//! Running `auth.sandbox_isolated`: the controls (each credential works at
//! home; the other environment does not serve the probe without one), the
//! crossings (each credential sent to the other environment), production's
//! counter read around the sandbox credential's probes, then the judgement
//! (`judge`). Production's answers are kept without their bodies: a
//! production that accepted the sandbox key answered with production data.

use super::judge::{self, Answer, CounterReading, Crossing};
use super::plan::{is_read_only, AuthPlan, SandboxIsolatedPlan};
use crate::context::{CheckContext, RequestPlan, Scope, Template};
use crate::families::common;
use crate::http::{Rendered, Target, TransportError};
use crate::outcome::{prop, Evidence, Outcome};

/// Runs a planned `auth.*` check.
pub async fn run(plan: &AuthPlan, ctx: &CheckContext) -> Outcome {
    match plan {
        AuthPlan::SandboxIsolated(p) => sandbox_isolated(p, ctx).await,
    }
}

/// The label of the production credential in quota notes.
const PRODUCTION_CREDENTIAL: &str = "the production credential";

/// Where production is: the suite's `production.base_url`, else the
/// embedded reference's production twin.
fn production_url(p: &SandboxIsolatedPlan, ctx: &CheckContext) -> Result<String, &'static str> {
    match (&p.production.base_url, &ctx.production_twin) {
        (Some(u), _) => Ok(u.clone()),
        (None, Some(twin)) => Ok(twin.clone()),
        (None, None) => Err(
            "production.base_url is empty: give production's base URL (e.g. `${env.TMINUS_PRODUCTION}`); only a run against the embedded reference has a production twin to stand for it",
        ),
    }
}

/// Refuses, before anything is sent, what the plan already refuses: a
/// mutating probe to production without `allow_production_writes`, and a
/// probe that carries a credential header of its own (it would replace the
/// credential under test, and make the anonymous control not anonymous).
pub fn refuse_unsafe(p: &SandboxIsolatedPlan, credential_headers: &[&str]) -> Option<String> {
    for r in &p.probes {
        if !p.allow_production_writes && !is_read_only(&r.method) {
            return Some(format!(
                "refusing to send a {} probe to production: only GET or HEAD go there unless the check says `allow_production_writes: true`",
                r.method
            ));
        }
        if let Some((k, _)) = r
            .headers
            .iter()
            .find(|(k, _)| credential_headers.iter().any(|c| c.eq_ignore_ascii_case(k)))
        {
            return Some(format!(
                "a probe sets `{k}`, a header that carries a credential: the probes take each environment's credential from the suite (target.headers, production.headers)"
            ));
        }
    }
    if let Some(c) = &p.production.effects {
        if !is_read_only(&c.request.method) {
            return Some(format!(
                "refusing to read production's counter with {}: a counter is read with GET",
                c.request.method
            ));
        }
    }
    None
}

/// A target with `headers` as its only credential.
fn with_credential(
    base: &Target,
    base_url: &str,
    headers: Vec<(String, Template)>,
    label: &str,
) -> Target {
    Target {
        base_url: base_url.to_owned(),
        headers,
        second_tenant_headers: None,
        timeout: base.timeout,
        label: label.to_owned(),
        auth: None,
        second_tenant_auth: None,
    }
}

/// Sends one request; its evidence goes to `evidence` (without the body
/// when `production`). A timeout is an answer (inconclusive later); any
/// other transport failure ends the check as an error naming the address.
async fn ask(
    ctx: &CheckContext,
    r: &Rendered,
    label: &str,
    production: bool,
    evidence: &mut Vec<Evidence>,
) -> Result<Answer, Outcome> {
    match ctx.client.send(r).await {
        Ok(ex) => {
            let mut ev = common::evidence(label, &ex);
            if production {
                ev.detail = None;
            }
            evidence.push(ev);
            Ok(Answer::Status {
                status: ex.status(),
                shown: common::describe(&ex),
            })
        }
        Err(e @ TransportError::Timeout { .. }) => {
            evidence.push(Evidence::from_transport(label, &e));
            Ok(Answer::TimedOut)
        }
        Err(e) => Err(Outcome::transport(label, &e).with_evidence(std::mem::take(evidence))),
    }
}

/// Sends every probe through `target`.
async fn ask_all(
    ctx: &CheckContext,
    probes: &[RequestPlan],
    target: &Target,
    label: &str,
    production: bool,
    evidence: &mut Vec<Evidence>,
) -> Result<Vec<(String, Answer)>, Outcome> {
    let mut out = Vec::new();
    for p in probes {
        let r = target.render(p, &Scope::new());
        let line = format!("{} {}", r.method, r.url);
        out.push((line, ask(ctx, &r, label, production, evidence).await?));
    }
    Ok(out)
}

fn crossings(
    own: Vec<(String, Answer)>,
    anonymous: Vec<(String, Answer)>,
    crossed: Vec<(String, Answer)>,
) -> Vec<Crossing> {
    own.into_iter()
        .zip(anonymous)
        .zip(crossed)
        .map(
            |(((_, own), (_, anonymous)), (request, crossed))| Crossing {
                request,
                own,
                anonymous,
                crossed,
            },
        )
        .collect()
}

async fn sandbox_isolated(p: &SandboxIsolatedPlan, ctx: &CheckContext) -> Outcome {
    let sandbox = &ctx.target;
    let prod_url = match production_url(p, ctx) {
        Ok(u) => u,
        Err(why) => return Outcome::error(why),
    };
    let shown_prod = crate::redact::mask_userinfo(&prod_url);
    if crate::http::same_origin(&prod_url, &sandbox.base_url) {
        return Outcome::error(format!(
            "production ({shown_prod}) is the sandbox's own origin: give production's base URL, not the target's"
        ));
    }
    let mut credential_headers: Vec<&str> =
        sandbox.headers.iter().map(|(k, _)| k.as_str()).collect();
    if let Some(h) = &p.production.headers {
        credential_headers.extend(h.iter().map(|(k, _)| k.as_str()));
    }
    if sandbox.auth.is_some() {
        credential_headers.push("Authorization");
    }
    if let Some(why) = refuse_unsafe(p, &credential_headers) {
        return Outcome::error(why);
    }
    ctx.note(if p.allow_production_writes {
        format!("production {shown_prod}: writes allowed (allow_production_writes: true)")
    } else {
        format!("production {shown_prod}: read-only probes (GET/HEAD), no write is sent to it")
    });
    let mut ev = Vec::new();
    let sandbox_on_prod = Target {
        base_url: prod_url.clone(),
        second_tenant_headers: None,
        second_tenant_auth: None,
        ..sandbox.clone()
    };
    let anon_on_prod = with_credential(sandbox, &prod_url, Vec::new(), "no credential");
    let anon_on_sandbox = with_credential(sandbox, &sandbox.base_url, Vec::new(), "no credential");
    let prod = p.production.headers.as_ref().map(|h| {
        (
            with_credential(sandbox, &prod_url, h.clone(), PRODUCTION_CREDENTIAL),
            with_credential(sandbox, &sandbox.base_url, h.clone(), PRODUCTION_CREDENTIAL),
        )
    });
    let run = async {
        let own = ask_all(
            ctx,
            &p.probes,
            sandbox,
            "sandbox credential on the sandbox",
            false,
            &mut ev,
        )
        .await?;
        let prod_home = match &prod {
            Some((home, _)) => Some(
                ask_all(
                    ctx,
                    &p.probes,
                    home,
                    "production credential on production",
                    true,
                    &mut ev,
                )
                .await?,
            ),
            None => None,
        };
        let anon_prod = ask_all(
            ctx,
            &p.probes,
            &anon_on_prod,
            "no credential on production",
            true,
            &mut ev,
        )
        .await?;
        let counter_ctx = CheckContext {
            target: match &prod {
                Some((home, _)) => home.clone(),
                None => anon_on_prod.clone(),
            },
            ..ctx.clone()
        };
        let before = match &p.production.effects {
            Some(c) => {
                let (n, ex) = common::read_counter(
                    &counter_ctx,
                    c,
                    &Scope::new(),
                    "production's counter before",
                )
                .await?;
                ev.push(common::evidence("production's counter before", &ex));
                Some(n)
            }
            None => None,
        };
        let crossed = ask_all(
            ctx,
            &p.probes,
            &sandbox_on_prod,
            "sandbox credential on production",
            true,
            &mut ev,
        )
        .await?;
        let counter = match (&p.production.effects, before) {
            (Some(c), Some(before)) => {
                let (after, ex) = common::read_counter(
                    &counter_ctx,
                    c,
                    &Scope::new(),
                    "production's counter after",
                )
                .await?;
                ev.push(common::evidence("production's counter after", &ex));
                Some(CounterReading {
                    name: c.value.to_string(),
                    before,
                    after,
                })
            }
            _ => None,
        };
        let back = match (&prod, prod_home) {
            (Some((_, away)), Some(home)) => {
                let anon = ask_all(
                    ctx,
                    &p.probes,
                    &anon_on_sandbox,
                    "no credential on the sandbox",
                    false,
                    &mut ev,
                )
                .await?;
                let crossed = ask_all(
                    ctx,
                    &p.probes,
                    away,
                    "production credential on the sandbox",
                    false,
                    &mut ev,
                )
                .await?;
                Some(crossings(home, anon, crossed))
            }
            _ => None,
        };
        Ok::<_, Outcome>((crossings(own, anon_prod, crossed), counter, back))
    };
    let (forth, counter, back) = match run.await {
        Ok(r) => r,
        Err(o) => return o,
    };
    let mode = if p.allow_production_writes {
        "writes allowed (allow_production_writes: true)"
    } else {
        "read-only (GET/HEAD): no write was sent to production"
    };
    let pending = forth.iter().any(|c| matches!(c.crossed, Answer::TimedOut));
    let mut assertions = vec![
        judge::refused(
            "sandbox_refused_by_production",
            judge::SANDBOX_TO_PRODUCTION,
            &forth,
            &format!("; probes {mode}"),
        ),
        judge::nothing_created(counter.as_ref(), p.probes.len() as u64, pending),
    ];
    assertions.push(match &back {
        Some(b) => judge::refused(
            "production_refused_by_sandbox",
            judge::PRODUCTION_TO_SANDBOX,
            b,
            "",
        ),
        None => crate::outcome::Assertion::skipped(
            "production_refused_by_sandbox",
            "not judged: no production credential was given (`production.headers`)",
        ),
    });
    Outcome::judged(assertions)
        .with_evidence(ev)
        .with_properties([
            prop("production", shown_prod),
            prop("production_probes", mode),
        ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::plan_check;

    fn planned(fields: &str) -> SandboxIsolatedPlan {
        let CheckPlan::Auth(p) = plan_check("auth.sandbox_isolated", fields) else {
            panic!("not an auth plan");
        };
        let AuthPlan::SandboxIsolated(s) = *p;
        s
    }

    /// The executor refuses a mutating probe to production on its own,
    /// whatever the plan let through: a plan changed after planning (or a
    /// bug in it) still sends no write to production.
    #[test]
    fn a_mutating_probe_is_refused_without_allow_production_writes() {
        let mut p = planned(
            "    probes: [{ method: POST, path: /x }]\n    production: {}\n    allow_production_writes: true\n",
        );
        assert!(refuse_unsafe(&p, &[]).is_none());
        p.allow_production_writes = false;
        let why = refuse_unsafe(&p, &[]).expect("refused");
        assert!(
            why.contains("refusing to send a POST probe to production"),
            "{why}"
        );
        let p =
            planned("    probes: [{ method: HEAD, path: /x }, { path: /y }]\n    production: {}\n");
        assert!(refuse_unsafe(&p, &[]).is_none());
    }

    #[test]
    fn a_probe_may_not_carry_a_credential_header() {
        let p = planned(
            "    probes: [{ path: /x, headers: { authorization: Bearer k } }]\n    production: {}\n",
        );
        let why = refuse_unsafe(&p, &["Authorization"]).expect("refused");
        assert!(why.contains("`authorization`"), "{why}");
    }
}
