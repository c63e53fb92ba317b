//! `target.tls`: a suite's TLS options planned (paths relative to the suite
//! file, each one checked to be a file, `min_version` and `server_name`
//! read), and the one TLS setup a run gets from its suites and its command
//! line.
//!
//! TLS is set once per process, for every client (see `http::tls`), so the
//! suites of one run must agree on it; the command line's options win over
//! a suite's, field by field.

use std::path::Path;

use crate::context::PlanCtx;
use crate::http::tls::{TlsFile, TlsOptions};
use crate::suite::model::TlsSpec;

use super::PlannedSuite;

/// Plans `target.tls`; a problem is an error at its value.
pub fn plan_tls(ctx: &mut PlanCtx<'_>, spec: &TlsSpec) -> TlsOptions {
    let suite = ctx.file.display().to_string();
    let file = |ctx: &mut PlanCtx<'_>,
                field: &str,
                v: &Option<serde_saphyr::Spanned<String>>|
     -> Option<TlsFile> {
        let v = v.as_ref()?;
        let text = ctx.template(v).as_literal()?;
        let rel = Path::new(text.trim());
        let path = match ctx.file.parent() {
            Some(d) if rel.is_relative() => d.join(rel),
            _ => rel.to_path_buf(),
        };
        if !path.is_file() {
            ctx.error(
                v.referenced,
                format!(
                    "target.tls.{field}: no file {} (paths are relative to the suite file)",
                    path.display()
                ),
            );
            return None;
        }
        Some(TlsFile::new(format!("target.tls.{field} of {suite}"), path))
    };
    let ca = file(ctx, "ca", &spec.ca);
    let cert = file(ctx, "cert", &spec.cert);
    let key = file(ctx, "key", &spec.key);
    if key.is_some() && spec.cert.is_none() {
        if let Some(k) = &spec.key {
            ctx.error(
                k.referenced,
                "target.tls.key needs target.tls.cert: the certificate it belongs to",
            );
        }
    }
    let mut server_name = None;
    if let Some(n) = &spec.server_name {
        if let Some(text) = ctx.template(n).as_literal() {
            let text = text.trim().to_owned();
            match rustls::pki_types::ServerName::try_from(text.as_str()) {
                Ok(_) => server_name = Some(text),
                Err(_) => ctx.error(
                    n.referenced,
                    format!("target.tls.server_name `{text}` is not a DNS name or an IP address"),
                ),
            }
        }
    }
    let mut tls13_only = false;
    if let Some(v) = &spec.min_version {
        match v.value.trim() {
            "1.2" => {}
            "1.3" => tls13_only = true,
            "1.0" | "1.1" => ctx.error(
                v.referenced,
                format!(
                    "target.tls.min_version `{}`: tminus speaks TLS 1.2 and 1.3 only (RFC 8996 deprecates 1.0 and 1.1)",
                    v.value
                ),
            ),
            other => ctx.error(
                v.referenced,
                format!("target.tls.min_version `{other}` is not one of \"1.2\", \"1.3\""),
            ),
        }
    }
    TlsOptions {
        ca,
        cert,
        key,
        server_name,
        tls13_only,
        insecure: spec.insecure.as_ref().is_some_and(|i| i.value),
    }
}

/// The run's TLS options: the suites' `target.tls` (which must agree) with
/// the command line's over them.
pub fn for_the_run(suites: &[PlannedSuite], cli: TlsOptions) -> Result<TlsOptions, String> {
    let mut chosen: Option<(&PlannedSuite, &TlsOptions)> = None;
    for s in suites {
        let Some(t) = &s.tls else { continue };
        match chosen {
            None => chosen = Some((s, t)),
            Some((first, ft)) if !ft.same_as(t) => {
                return Err(format!(
                    "{} and {} set different target.tls: one run speaks TLS one way (it is set for every client); run them separately, or give the options on the command line",
                    first.file.display(),
                    s.file.display()
                ))
            }
            Some(_) => {}
        }
    }
    Ok(chosen
        .map(|(_, t)| t.clone())
        .unwrap_or_default()
        .overlaid(cli))
}
