//! Planning the `contract.*` kinds: the suite must name its OpenAPI
//! document, and a request whose method and path are known before the run
//! must be an operation the document marks `deprecated: true` with a
//! readable `x-sunset` (else the check could never judge anything: an error
//! at the check, before anything is sent).

use std::sync::Arc;

use super::spec::{ContractSpec, DeprecationSpec};
use crate::context::{PlanCtx, RequestPlan, UrlPlan};
use crate::contract::Contract;

/// A planned `contract.*` check.
#[derive(Debug, Clone)]
pub enum ContractPlan {
    Deprecation(DeprecationPlan),
}

#[derive(Debug, Clone)]
pub struct DeprecationPlan {
    pub request: RequestPlan,
    /// The suite's document (`None` only when planning failed: the run
    /// never starts then).
    pub contract: Option<Arc<Contract>>,
}

impl ContractPlan {
    pub fn requests(&self) -> crate::context::budget::Requests {
        match self {
            ContractPlan::Deprecation(_) => crate::context::budget::Requests::own(1),
        }
    }
}

pub fn plan(ctx: &mut PlanCtx<'_>, spec: &ContractSpec) -> ContractPlan {
    match spec {
        ContractSpec::Deprecation(s) => ContractPlan::Deprecation(deprecation(ctx, s)),
    }
}

fn deprecation(ctx: &mut PlanCtx<'_>, s: &DeprecationSpec) -> DeprecationPlan {
    let at = s.id.referenced;
    let request = ctx.request(&s.request, at);
    let contract = ctx.contract.clone();
    match &contract {
        None => ctx.error(
            at,
            "contract.deprecation judges against the suite's OpenAPI document: add `contract: { openapi: FILE }`",
        ),
        Some(c) => {
            if let UrlPlan::Path(t) = &request.url {
                if let Some(path) = t.as_literal() {
                    if let Err(why) = deprecated_operation(c, request.method.as_str(), &path) {
                        ctx.error(at, why);
                    }
                }
            }
        }
    }
    DeprecationPlan { request, contract }
}

/// The deprecated operation `method url` is, or why it is none.
pub fn deprecated_operation<'c>(
    c: &'c Contract,
    method: &str,
    url: &str,
) -> Result<
    (
        &'c crate::contract::Operation,
        &'c crate::contract::deprecation::Deprecated,
    ),
    String,
> {
    let Some(op) = c.find(method, url) else {
        return Err(format!(
            "{method} {url} is no operation of {}: contract.deprecation needs a request to an operation the document marks `deprecated: true`",
            c.source
        ));
    };
    let Some(dep) = &op.deprecated else {
        return Err(format!(
            "{} ({method} {}) is not marked `deprecated: true` in {}: there is no deprecation to judge",
            op.id, op.template.text, c.source
        ));
    };
    if let Some(Err(why)) = &dep.sunset {
        return Err(format!("{} ({}): {why}", op.id, op.pointer));
    }
    Ok((op, dep))
}
