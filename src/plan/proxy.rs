//! `target.proxy` planned (a proxy URL, its userinfo a secret), and the one
//! set of proxies a run gets from its suites, its command line and the
//! environment. Like TLS it is set once per process (`http::proxy`), so the
//! suites of one run must agree on it.

use crate::context::PlanCtx;

use super::PlannedSuite;

/// Plans `target.proxy`: a proxy URL, its userinfo a secret.
pub fn plan_proxy(ctx: &mut PlanCtx<'_>, v: &serde_saphyr::Spanned<String>) -> Option<String> {
    let text = ctx.template(v).as_literal()?;
    let text = text.trim().to_owned();
    if text.is_empty() {
        return None;
    }
    ctx.redactor.add_userinfo(&text);
    match crate::http::proxy::parse_proxy_url(&text, "target.proxy") {
        Ok(_) => Some(text),
        Err(e) => {
            ctx.error(v.referenced, e);
            None
        }
    }
}

/// The run's proxies: `--proxy` (`cli`), else the suites' `target.proxy`
/// (which must agree), else the environment's; `--noproxy` in place of
/// `NO_PROXY`.
pub fn proxies_for_the_run(
    suites: &[PlannedSuite],
    cli: Option<&str>,
    noproxy: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<crate::http::proxy::Proxies, String> {
    use crate::http::proxy::{parse_proxy_url, Proxies};
    // An environment proxy tminus cannot use is an error only while it
    // would be used: `--proxy` replaces it and `--noproxy '*'` bypasses it.
    let overridden = cli.is_some() || noproxy.is_some_and(|n| n.trim() == "*");
    let mut proxies = match Proxies::from_env(&env) {
        Ok(p) => p,
        Err(_) if overridden => Proxies::default(),
        Err(e) => {
            return Err(format!(
                "{e} (--proxy URL replaces it, --noproxy '*' goes direct)"
            ))
        }
    };
    let mut named: Option<(&PlannedSuite, &String)> = None;
    for s in suites {
        let Some(p) = &s.proxy else { continue };
        match named {
            Some((first, fp)) if fp != p => {
                return Err(format!(
                    "{} and {} set different target.proxy: one run goes through one proxy; run them separately, or give --proxy",
                    first.file.display(),
                    s.file.display()
                ))
            }
            Some(_) => {}
            None => named = Some((s, p)),
        }
    }
    if let Some(url) = cli {
        proxies = proxies.with_explicit(parse_proxy_url(url, "--proxy")?, "--proxy");
    } else if let Some((s, url)) = named {
        let from = format!("target.proxy of {}", s.file.display());
        proxies = proxies.with_explicit(parse_proxy_url(url, &from)?, &from);
    }
    if let Some(list) = noproxy {
        proxies = proxies.with_no_proxy(list);
    }
    Ok(proxies)
}
