//! The planning driver: suites validated, interpolated and given their
//! defaults. Everything that can be wrong with a suite is found here, all at
//! once, so `tminus validate` and `tminus run` report every problem before
//! sending a single request.
//!
//! The driver makes one planning context (`context::PlanCtx`) per file and
//! plans each check through the registry (`families::plan_check`); it sits
//! above the families, which see only the context.

pub mod proxy;
pub mod shard;
pub mod tls;

use crate::families::load::plan as load;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use crate::model::profile::Profile;
use crate::outcome::Severity;

use crate::context::{check_base_url, PlanCtx, Template, MAX_PAUSE};
use crate::redact::Redactor;
use crate::suite::model::EmbeddedListener;
use crate::suite::{Diagnostics, SuiteSource};

/// Default per-request timeout when neither the suite nor the CLI sets one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Options from the command line that shape the plan.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// `--var K=V`, overriding suite `vars:`.
    pub vars: Vec<(String, String)>,
    /// `--target URL`, overriding every suite's base URL.
    pub target: Option<String>,
    /// `--timeout`: the default per-request timeout (suite `target.timeout` wins
    /// over the built-in default, `--timeout` wins over both).
    pub timeout: Option<Duration>,
    /// `--only PATTERN` (glob on `check` or `suite/check`); empty means all.
    pub only: Vec<String>,
    /// `--tag TAG`; empty means all.
    pub tags: Vec<String>,
    /// `--sink-listen`, overriding every suite's `target.sink.listen`.
    pub sink_listen: Option<std::net::SocketAddr>,
    /// `--sink-url`, overriding every suite's `target.sink.url`.
    pub sink_url: Option<String>,
    /// `--sink-max-body`: the sink's body limit.
    pub sink_max_body: Option<u64>,
    /// `--sink-cert`/`--sink-key`: the sink serves https.
    pub sink_tls: Option<crate::http::tls_server::ServerTls>,
}

#[derive(Debug)]
pub struct Plan {
    pub suites: Vec<PlannedSuite>,
    pub redactor: Redactor,
}

impl Plan {
    pub fn check_count(&self) -> usize {
        self.suites
            .iter()
            .map(|s| s.checks.len() + usize::from(s.load.is_some()))
            .sum()
    }
    /// True when some suite has no target and the embedded reference is needed.
    pub fn needs_reference(&self) -> bool {
        self.suites.iter().any(|s| s.base_url.is_none())
    }
    /// True when some suite without a target has a check that goes to the
    /// embedded reference's production twin (`auth.sandbox_isolated`).
    pub fn needs_production_twin(&self) -> bool {
        self.suites.iter().any(|s| {
            s.base_url.is_none() && s.checks.iter().any(|c| c.body.needs_production_twin())
        })
    }
    /// True when some suite without a target asks for the embedded
    /// reference's listener that requires client certificates.
    pub fn needs_client_cert_reference(&self) -> bool {
        self.suites
            .iter()
            .any(|s| s.base_url.is_none() && s.on_client_cert_listener())
    }
}

impl PlannedSuite {
    /// Whether, run against the embedded reference, the suite goes to its
    /// listener that requires client certificates (`target.embedded`).
    pub fn on_client_cert_listener(&self) -> bool {
        self.embedded == EmbeddedListener::ClientCerts
    }
}

#[derive(Debug)]
pub struct PlannedSuite {
    pub name: String,
    pub file: PathBuf,
    /// SHA-256 (hex) of the exact bytes this suite was planned from, so a
    /// certification report names what it certified.
    pub digest: String,
    pub version: Option<String>,
    /// `None`: run against the embedded reference integration.
    pub base_url: Option<String>,
    /// `target.embedded`: which of the embedded reference's listeners,
    /// when `base_url` is `None`.
    pub embedded: EmbeddedListener,
    pub headers: Vec<(String, Template)>,
    /// Headers of a second tenant, when the suite configures one.
    pub second_tenant_headers: Option<Vec<(String, Template)>>,
    /// `target.auth`: the OAuth2 client whose token is the suite's credential.
    pub auth: Option<crate::http::oauth::ClientCredentials>,
    /// `target.second_tenant_auth`: the second tenant's OAuth2 client.
    pub second_tenant_auth: Option<crate::http::oauth::ClientCredentials>,
    pub timeout: Duration,
    /// `target.rate_limit`: the quota declared for a target that sends no
    /// rate-limit headers.
    pub rate_limit: Option<crate::http::quota::DeclaredQuota>,
    pub checks: Vec<PlannedCheck>,
    /// The burst rehearsal, run after the checks.
    pub load: Option<load::LoadPlan>,
    /// Where sink checks listen and the URL the platform is given.
    pub sink: crate::sink::SinkEndpoint,
    /// `target.tls`, planned (the run's TLS: [`tls::for_the_run`]).
    pub tls: Option<crate::http::tls::TlsOptions>,
    /// `target.proxy`, checked to be a proxy URL.
    pub proxy: Option<String>,
    /// `strict: true`: broken SHOULD properties fail (as `--strict`).
    pub strict: bool,
    /// The profile its defaults followed.
    pub profile: Profile,
    /// `contract:`: the OpenAPI document every response is judged against.
    pub contract: Option<std::sync::Arc<crate::contract::Contract>>,
    /// `observe.logs`: where the target's logs are read.
    pub logs: Option<crate::logs::LogSource>,
}

#[derive(Debug)]
pub struct PlannedCheck {
    pub id: String,
    pub kind: &'static str,
    pub tags: Vec<String>,
    pub description: Option<String>,
    pub body: CheckPlan,
    /// Every property the kind judges with its level for this check (the
    /// table's, or the check's `severity:` override).
    pub severities: Vec<(&'static str, Severity)>,
    /// `after:`: how long the runner waits once the check is done.
    pub after: Option<Duration>,
    /// `waive:`, checked against the kind's properties.
    pub waivers: Vec<crate::waiver::Waiver>,
    /// The catalogue requirements the kind certifies.
    pub requirements: crate::coverage::Requirements,
}

impl PlannedCheck {
    /// The level of `property` (MUST for a property the table does not
    /// declare: a wrong PASS is worse than a wrong FAIL).
    pub fn severity_of(&self, property: &str) -> Severity {
        self.severities
            .iter()
            .find_map(|(p, s)| (*p == property).then_some(*s))
            .unwrap_or(Severity::Must)
    }

    /// The level of the kind's only property, for an outcome without
    /// per-property assertions.
    pub fn single_severity(&self) -> Option<Severity> {
        match self.severities.as_slice() {
            [(_, s)] => Some(*s),
            _ => None,
        }
    }
}

/// The kind's properties at their level under the suite's profile, with the
/// check's `severity:` overrides applied; an
/// override naming no property of the kind is an error with "did you mean".
fn plan_severities(
    ctx: &mut PlanCtx<'_>,
    kind: &str,
    overrides: Option<&crate::spec::kinds::SeverityOverrides>,
) -> Vec<(&'static str, Severity)> {
    let props = crate::families::kind(kind)
        .map(|k| k.judged())
        .unwrap_or_default();
    // The suite's profile picks the level (a botix contract property is a
    // MUST there); a check's `severity:` override wins over both.
    let mut out: Vec<(&'static str, Severity)> = props
        .iter()
        .map(|p| (p.name, p.severity_in(ctx.profile)))
        .collect();
    if let Some(o) = overrides {
        for (name, sev) in &o.value {
            match out.iter_mut().find(|(p, _)| *p == name.as_str()) {
                Some(slot) => slot.1 = *sev,
                None => {
                    let names: Vec<&str> = props.iter().map(|p| p.name).collect();
                    let hint = crate::model::text::suggest(name, names.iter().copied())
                        .map(|s| format!("; did you mean `{s}`?"))
                        .unwrap_or_default();
                    ctx.error(
                        o.referenced,
                        format!(
                            "`severity:` names `{name}`, which `{kind}` does not judge (its properties: {}){hint}",
                            names.join(", ")
                        ),
                    );
                }
            }
        }
    }
    out
}

pub use crate::families::CheckPlan;

/// Builds the plan from loaded suites, reading the process environment.
pub fn build(loaded: &[SuiteSource], opts: &PlanOptions) -> Result<Plan, Diagnostics> {
    build_with_env(loaded, opts, &|k| std::env::var(k).ok())
}

pub fn build_with_env(
    loaded: &[SuiteSource],
    opts: &PlanOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, Diagnostics> {
    let redactor = Redactor::new();
    let mut diags = Diagnostics::default();
    let mut suites = Vec::new();
    let mut names: HashMap<String, PathBuf> = HashMap::new();
    for l in loaded {
        let mut ctx = PlanCtx::new(&l.path, &l.source, redactor.clone(), Box::new(env));
        let suite = plan_suite(&mut ctx, l, opts);
        if let Some(prev) = names.insert(suite.name.clone(), l.path.clone()) {
            ctx.error(
                l.file.suite.referenced,
                format!(
                    "suite name `{}` is also used by {}",
                    suite.name,
                    prev.display()
                ),
            );
        }
        diags.extend(ctx.diags);
        suites.push(suite);
    }
    if diags.is_empty() {
        Ok(Plan { suites, redactor })
    } else {
        // Messages may quote values built from secrets (a base_url, a
        // header name, a URL): masked with every secret of every suite.
        diags.redact(&redactor);
        Err(diags)
    }
}

fn plan_suite(ctx: &mut PlanCtx<'_>, l: &SuiteSource, opts: &PlanOptions) -> PlannedSuite {
    let f = &l.file;
    ctx.profile = f.profile.as_ref().map(|p| p.value).unwrap_or_default();
    // Suite vars may use env/secret placeholders; CLI vars are taken as given.
    for (k, v) in &f.vars {
        let t = ctx.template_at(&v.value.0, v.referenced);
        match t.as_literal() {
            Some(s) => {
                ctx.vars.insert(k.clone(), s);
            }
            None => ctx.error(
                v.referenced,
                format!("variable `{k}` cannot use `${{uuid}}`/`${{ulid}}`: give it a fixed value"),
            ),
        }
    }
    for (k, v) in &opts.vars {
        ctx.vars.insert(k.clone(), v.clone());
    }
    let mut base_url = None;
    let mut headers = Vec::new();
    let mut second_tenant_headers = None;
    let mut auth = None;
    let mut second_tenant_auth = None;
    let mut timeout = DEFAULT_TIMEOUT;
    let mut rate_limit = None;
    if let Some(t) = &f.target {
        if let Some(q) = &t.rate_limit {
            match crate::http::quota::DeclaredQuota::parse(&q.value) {
                Ok(q) => rate_limit = Some(q),
                Err(e) => ctx.error(q.referenced, format!("rate_limit: {e}")),
            }
        }
        if let Some(b) = &t.base_url {
            let tpl = ctx.template(b);
            if let Some(s) = tpl.as_literal() {
                let s = s.trim().trim_end_matches('/').to_owned();
                if !s.is_empty() {
                    ctx.redactor.add_userinfo(&s);
                    if let Err(e) = check_base_url(&s) {
                        let shown = crate::redact::mask_userinfo(&s);
                        ctx.error(b.referenced, format!("base_url `{shown}` {e}"));
                    }
                    base_url = Some(s);
                }
            }
        }
        for (k, v) in &t.headers {
            headers.push(ctx.header(k, v));
        }
        if let Some(h) = &t.second_tenant_headers {
            second_tenant_headers = Some(h.iter().map(|(k, v)| ctx.header(k, v)).collect());
        }
        auth = plan_auth(ctx, t.auth.as_ref(), &t.headers, "auth", "headers");
        second_tenant_auth = plan_auth(
            ctx,
            t.second_tenant_auth.as_ref(),
            t.second_tenant_headers
                .as_ref()
                .unwrap_or(&Default::default()),
            "second_tenant_auth",
            "second_tenant_headers",
        );
        if let (Some(a), Some(b), Some(spec)) = (&auth, &second_tenant_auth, &t.second_tenant_auth)
        {
            if a.client_id == b.client_id && a.token_url == b.token_url {
                ctx.error(
                    spec.oauth2.client_id.referenced,
                    format!(
                        "`second_tenant_auth` uses the client `{}` of `auth`: the second tenant must be another client, or its checks would compare a tenant with itself",
                        b.client_id
                    ),
                );
            }
        }
        if let Some(to) = &t.timeout {
            if to.value.0.is_zero() {
                ctx.error(to.referenced, "timeout must be longer than zero");
            }
            timeout = to.value.0;
        }
    }
    let sink = plan_sink(ctx, f.target.as_ref().and_then(|t| t.sink.as_ref()), opts);
    let tls = f
        .target
        .as_ref()
        .and_then(|t| t.tls.as_ref())
        .map(|s| tls::plan_tls(ctx, s));
    let proxy = f
        .target
        .as_ref()
        .and_then(|t| t.proxy.as_ref())
        .and_then(|p| proxy::plan_proxy(ctx, p));
    if let Some(t) = &opts.target {
        ctx.redactor.add_userinfo(t);
        base_url = Some(t.trim_end_matches('/').to_owned());
    }
    if let Some(t) = opts.timeout {
        timeout = t;
    }
    let suite_name = f.suite.value.clone();
    if f.checks.is_empty() && f.load.is_none() {
        ctx.error(
            f.suite.referenced,
            format!("suite `{suite_name}` has no checks and no `load:`: there is nothing to run"),
        );
    }
    // Before the checks: the `contract.*` kinds plan against the document.
    let contract = plan_contract(ctx, f.contract.as_ref());
    ctx.contract = contract.clone();
    // Before the checks: the log checks plan against it.
    ctx.logs = f
        .observe
        .as_ref()
        .and_then(|o| o.logs.as_ref())
        .and_then(|l| ctx.logs_plan(l));
    let mut checks = Vec::new();
    let mut ids: HashSet<String> = HashSet::new();
    for c in &f.checks {
        let id = c.id();
        if !ids.insert(id.value.clone()) {
            ctx.error(
                id.referenced,
                format!("check id `{}` is used twice in this suite", id.value),
            );
        }
        if !id
            .value
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
            || id.value.is_empty()
        {
            ctx.error(
                id.referenced,
                format!(
                    "check id `{}` may only hold letters, digits, `-`, `_` and `.`",
                    id.value
                ),
            );
        }
        ctx.captures.clear();
        let body = crate::families::plan_check(ctx, c);
        if !selected(&suite_name, &id.value, c.tags(), opts) {
            continue;
        }
        let severities = plan_severities(ctx, c.kind_name(), c.severity());
        let properties: Vec<&'static str> = severities.iter().map(|(p, _)| *p).collect();
        let waivers =
            crate::waiver::plan(c.waive(), &properties, c.kind_name()).unwrap_or_else(|errors| {
                for (at, msg) in errors {
                    ctx.error(at, msg);
                }
                Vec::new()
            });
        let after = c.after().map(|a| {
            if a.value.0 > MAX_PAUSE {
                ctx.error(
                    a.referenced,
                    "`after:` may be at most 1h (it pauses the whole run)",
                );
            }
            a.value.0.min(MAX_PAUSE)
        });
        checks.push(PlannedCheck {
            id: id.value.clone(),
            kind: c.kind_name(),
            tags: c.tags().to_vec(),
            description: c.description().map(str::to_owned),
            body,
            severities,
            after,
            waivers,
            requirements: crate::coverage::of_kind(c.kind_name()),
        });
    }
    // The load is selected like a check: by its id (or suite/id) and tags.
    let load = f
        .load
        .as_ref()
        .map(|l| ctx.load_plan(l, f.suite.referenced))
        .filter(|l| selected(&suite_name, &l.id, &l.tags, opts));
    PlannedSuite {
        load,
        sink,
        tls,
        proxy,
        name: suite_name,
        file: l.path.clone(),
        digest: source_digest(&l.source),
        version: f.version.as_ref().map(|v| v.0.clone()),
        base_url,
        embedded: f.target.as_ref().map(|t| t.embedded).unwrap_or_default(),
        headers,
        second_tenant_headers,
        auth,
        second_tenant_auth,
        timeout,
        rate_limit,
        checks,
        strict: f.strict.unwrap_or(false),
        profile: ctx.profile,
        contract,
        logs: ctx.logs.clone(),
    }
}

/// `target.auth` (or `second_tenant_auth`, named `what`): every field
/// resolved now, the token URL a path on the target or an http(s) URL that
/// may carry the secret (https, or http to a loopback address), the secret registered with the
/// redactor; `headers` (the block named `headers_name`) may not set the
/// `Authorization` the token goes in.
fn plan_auth(
    ctx: &mut PlanCtx<'_>,
    spec: Option<&crate::suite::model::AuthSpec>,
    headers: &std::collections::BTreeMap<
        String,
        serde_saphyr::Spanned<crate::model::scalar::Scalar>,
    >,
    what: &str,
    headers_name: &str,
) -> Option<crate::http::oauth::ClientCredentials> {
    let o = &spec?.oauth2;
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("authorization") {
            ctx.error(
                v.referenced,
                format!(
                    "`{headers_name}` sets `{k}`, which `{what}` sets to its OAuth2 token: remove one of them"
                ),
            );
        }
    }
    let field = |ctx: &mut PlanCtx<'_>, name: &str, v: &serde_saphyr::Spanned<String>| {
        let text = ctx.template(v).as_literal();
        let Some(text) = text else {
            ctx.error(
                v.referenced,
                format!("`{what}.oauth2.{name}` cannot use `${{uuid}}`/`${{ulid}}`: it is fixed when the suite is planned"),
            );
            return None;
        };
        let text = text.trim().to_owned();
        if text.is_empty() {
            ctx.error(v.referenced, format!("`{what}.oauth2.{name}` is empty"));
            return None;
        }
        if text.chars().any(char::is_control) {
            ctx.error(
                v.referenced,
                format!("`{what}.oauth2.{name}` holds a line break or control character"),
            );
            return None;
        }
        Some(text)
    };
    // The secret first: any message below may quote a value made of it.
    let client_secret = field(ctx, "client_secret", &o.client_secret);
    if let Some(s) = &client_secret {
        ctx.redactor.add_named(crate::http::oauth::SECRET_NAME, s);
    }
    let token_url = field(ctx, "token_url", &o.token_url);
    let client_id = field(ctx, "client_id", &o.client_id);
    let scope = o.scope.as_ref().and_then(|s| field(ctx, "scope", s));
    let audience = o.audience.as_ref().and_then(|s| field(ctx, "audience", s));
    if let Some(u) = token_url.as_ref().filter(|u| u.starts_with('/')) {
        // A path: the target's own token endpoint, joined to its base URL
        // when the run starts (the embedded reference's port is only known
        // then).
        if u.starts_with("//") {
            ctx.error(
                o.token_url.referenced,
                format!("`{what}.oauth2.token_url` `{u}` is neither a path on the target (`/oauth/token`) nor an http(s) URL"),
            );
        }
    } else if let Some(u) = &token_url {
        ctx.redactor.add_userinfo(u);
        let shown = crate::redact::mask_userinfo(u);
        match crate::context::request::http_url(u) {
            Err(e) => ctx.error(
                o.token_url.referenced,
                format!("`{what}.oauth2.token_url` `{shown}` {e}"),
            ),
            Ok(parsed) if !parsed.username().is_empty() || parsed.password().is_some() => ctx.error(
                o.token_url.referenced,
                format!("`{what}.oauth2.token_url` `{shown}` carries user:password@: give the client's credentials as `client_id` and `client_secret`"),
            ),
            Ok(parsed) if parsed.fragment().is_some() => ctx.error(
                o.token_url.referenced,
                format!("`{what}.oauth2.token_url` `{shown}` may not carry a #fragment"),
            ),
            Ok(parsed)
                if parsed.scheme() == "http" && !crate::context::is_loopback(u) =>
            {
                ctx.error(
                    o.token_url.referenced,
                    format!(
                        "`{what}.oauth2.token_url` `{shown}` is plain http to another host: the client secret travels to it, so it must be https (RFC 6749 §2.3.1); http is allowed to a loopback address only"
                    ),
                )
            }
            Ok(_) => {}
        }
    }
    Some(crate::http::oauth::ClientCredentials {
        token_url: token_url?,
        client_id: client_id?,
        client_secret: client_secret?,
        scope,
        audience,
    })
}

/// `contract.openapi`, loaded relative to the suite file; a document that
/// does not load is an error at the `openapi:` value.
fn plan_contract(
    ctx: &mut PlanCtx<'_>,
    spec: Option<&crate::suite::model::ContractSpec>,
) -> Option<std::sync::Arc<crate::contract::Contract>> {
    let spec = spec?;
    let rel = std::path::Path::new(&spec.openapi.value);
    let path = ctx
        .file
        .parent()
        .map(|d| d.join(rel))
        .unwrap_or_else(|| rel.to_path_buf());
    let mut ignore = Vec::new();
    for p in &spec.ignore {
        match crate::contract::IgnoredPath::parse(&p.value) {
            Ok(i) => ignore.push(i),
            Err(e) => ctx.error(p.referenced, format!("contract.ignore: {e}")),
        }
    }
    match crate::contract::Contract::load(&path) {
        Ok(c) => {
            let level = match ctx.profile {
                Profile::Botix => crate::contract::Level::Must,
                Profile::Standard => crate::contract::Level::Should,
            };
            Some(std::sync::Arc::new(
                c.ignoring(ignore).required_header_level(level),
            ))
        }
        Err(e) => {
            ctx.error(spec.openapi.referenced, format!("contract: {e}"));
            None
        }
    }
}

/// `target.sink` with `--sink-listen` / `--sink-url` over it. A public URL
/// needs a fixed port to lead to: with port 0 the sink's port is only known
/// once it is bound, after the URL was given out.
fn plan_sink(
    ctx: &mut PlanCtx<'_>,
    spec: Option<&crate::suite::model::SinkSpec>,
    opts: &PlanOptions,
) -> crate::sink::SinkEndpoint {
    let mut at = crate::sink::SinkEndpoint::default();
    let mut url_at = None;
    if let Some(spec) = spec {
        if let Some(l) = &spec.listen {
            if let Some(text) = ctx.template(l).as_literal() {
                match text.trim().parse::<std::net::SocketAddr>() {
                    Ok(a) => at.listen = a,
                    Err(_) => ctx.error(
                        l.referenced,
                        format!(
                            "`sink.listen` `{text}` is not an ADDRESS:PORT (e.g. 0.0.0.0:8089)"
                        ),
                    ),
                }
            }
        }
        if let Some(u) = &spec.url {
            if let Some(text) = ctx.template(u).as_literal() {
                let text = text.trim().trim_end_matches('/').to_owned();
                ctx.redactor.add_userinfo(&text);
                if let Err(e) = check_base_url(&text) {
                    let shown = crate::redact::mask_userinfo(&text);
                    ctx.error(u.referenced, format!("`sink.url` `{shown}` {e}"));
                }
                at.public_url = Some(text);
                url_at = Some(u.referenced);
            }
        }
    }
    if let Some(l) = opts.sink_listen {
        at.listen = l;
    }
    if let Some(m) = opts.sink_max_body {
        at.max_body = usize::try_from(m).unwrap_or(usize::MAX);
    }
    at.tls = opts.sink_tls.clone();
    if let Some(u) = &opts.sink_url {
        ctx.redactor.add_userinfo(u);
        at.public_url = Some(u.trim_end_matches('/').to_owned());
    }
    if at.public_url.is_some() && at.listen.port() == 0 {
        // The CLI form is checked before planning; this is the suite's.
        if let Some(loc) = url_at.filter(|_| opts.sink_url.is_none()) {
            ctx.error(
                loc,
                "`sink.url` needs `sink.listen` with a fixed port (or --sink-listen): the URL must lead to where the sink listens",
            );
        }
    }
    at
}

/// SHA-256 of a suite's text, lowercase hex. The text is the file's bytes
/// unchanged (`read_suite` only checks they are UTF-8), so this equals
/// `sha256sum FILE`.
pub fn source_digest(source: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(source.as_bytes()))
}

/// `--only` globs match the check id or `suite/check`; `--tag` any tag.
fn selected(suite: &str, id: &str, tags: &[String], opts: &PlanOptions) -> bool {
    let only_ok = opts.only.is_empty()
        || opts
            .only
            .iter()
            .any(|p| glob_match(p, id) || glob_match(p, &format!("{suite}/{id}")));
    let tag_ok = opts.tags.is_empty() || opts.tags.iter().any(|t| tags.contains(t));
    only_ok && tag_ok
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == t[ti] || p[pi] == '?') {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn globs() {
        assert!(glob_match("idem*", "idem-replay"));
        assert!(glob_match("*replay", "idem-replay"));
        assert!(glob_match("s/*", "s/x"));
        assert!(!glob_match("idem", "idem-replay"));
    }

    #[test]
    fn a_planned_suite_carries_the_sha256_of_its_text() {
        let src = "suite: s\nchecks:\n  - id: a\n    steps:\n      - request: { path: /x }\n";
        let plan = plan_text(src).unwrap_or_else(|e| panic!("{e:?}"));
        // What `printf '%s' "$src" | sha256sum` prints.
        assert_eq!(plan.suites[0].digest, source_digest(src));
        assert_eq!(
            source_digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// Plans one suite given as text, with an empty environment.
    fn plan_text(src: &str) -> Result<Plan, Diagnostics> {
        let path = Path::new("s.yaml");
        let file = crate::suite::read::parse_str(path, src).unwrap();
        let loaded = vec![SuiteSource {
            path: path.into(),
            source: src.into(),
            file,
        }];
        build_with_env(&loaded, &PlanOptions::default(), &|_| None)
    }

    fn plan_errors(src: &str) -> Vec<String> {
        match plan_text(src) {
            Ok(_) => Vec::new(),
            Err(d) => {
                d.0.iter()
                    .map(|d| format!("{}: {}", d.line, d.message))
                    .collect()
            }
        }
    }

    #[test]
    fn requests_that_can_never_be_sent_are_refused() {
        let cases: &[(&str, &str)] = &[
            ("headers: { X-A: \"a\\r\\nX-Injected: 1\" }", "line break"),
            ("headers: { X-A: \"a\\u0000b\" }", "NUL"),
            (
                "headers: { \"Bad Name\": x }",
                "not a valid HTTP header name",
            ),
            ("url: file:///etc/passwd", "http:// or https://"),
            ("url: \"ht!tp://[::1\"", "http:// or https://"),
            ("url: \"http://[::1\"", "not a valid URL"),
            ("path: /x\n          timeout: 0s", "longer than zero"),
        ];
        for (req, want) in cases {
            let src = format!(
                "suite: s\nchecks:\n  - id: a\n    steps:\n      - request:\n          {req}\n"
            );
            let src = src.replace(
                "request:\n          headers",
                "request:\n          path: /\n          headers",
            );
            let errs = plan_errors(&src);
            assert!(
                errs.iter()
                    .any(|e| e.contains(want) && !e.starts_with("0:")),
                "{req}: {errs:?}"
            );
        }
    }

    #[test]
    fn target_timeout_and_url_are_checked() {
        let errs = plan_errors(
            "suite: s\ntarget: { base_url: \"http://u:pw@\", timeout: 0s }\nchecks: []\n",
        );
        assert!(
            errs.iter().any(|e| e.contains("longer than zero")),
            "{errs:?}"
        );
        assert!(errs.iter().any(|e| e.contains("base_url")), "{errs:?}");
        assert!(errs.iter().all(|e| !e.contains("pw")), "{errs:?}");
    }

    #[test]
    fn url_userinfo_is_a_secret() {
        let src =
            "suite: s\ntarget: { base_url: \"http://bob:pw-123456@127.0.0.1:9\" }\nchecks:\n  - id: a\n    steps: [{ request: { path: / } }]\n";
        let plan = plan_text(src).unwrap();
        let shown = plan
            .redactor
            .redact("GET http://bob:pw-123456@127.0.0.1:9/x");
        assert!(!shown.contains("pw-123456"), "{shown}");
    }

    #[test]
    fn collects_every_missing_variable() {
        let src = "suite: s\ntarget:\n  headers: { Authorization: \"Bearer ${secret.NOPE_A}\" }\nchecks:\n  - id: a\n    steps:\n      - request: { path: \"/x/${var.nope}\", headers: { X: \"${env.NOPE_B}\" } }\n";
        let d = plan_text(src).unwrap_err();
        assert_eq!(d.len(), 3, "{d}");
        assert_eq!(d.0[0].line, 3);
        assert!(d.0.iter().any(|x| x.message.contains("secret `NOPE_A`")));
        assert!(d
            .0
            .iter()
            .any(|x| x.message.contains("variable `nope`") && x.line == 7));
    }

    #[test]
    fn oauth2_auth_is_planned_and_its_mistakes_are_pointed_at() {
        let checks = "checks:\n  - id: a\n    steps: [{ request: { path: / } }]\n";
        let auth = |client: &str, url: &str| {
            format!("    oauth2:\n      token_url: \"{url}\"\n      client_id: {client}\n      client_secret: s3cr3t-value-{client}\n")
        };
        let src = format!(
            "suite: s\ntarget:\n  auth:\n{}      scope: read\n      audience: api\n  second_tenant_auth:\n{}{checks}",
            auth("a", "https://id.example/token"),
            auth("b", "/oauth/token")
        );
        let plan = plan_text(&src).unwrap_or_else(|e| panic!("{e}"));
        let s = &plan.suites[0];
        let a = s.auth.as_ref().unwrap();
        assert_eq!(
            (
                a.token_url.as_str(),
                a.client_id.as_str(),
                a.scope.as_deref(),
                a.audience.as_deref()
            ),
            ("https://id.example/token", "a", Some("read"), Some("api"))
        );
        assert_eq!(
            s.second_tenant_auth.as_ref().unwrap().token_url,
            "/oauth/token"
        );
        // The secret is known to the redactor before anything is sent.
        assert!(!plan.redactor.redact("x s3cr3t-value-a").contains("s3cr3t"));
        assert!(!format!("{s:?}").contains("s3cr3t-value"), "{s:?}");

        let cases: &[(String, &str, u64)] = &[
            (
                format!(
                    "  headers: {{ Authorization: \"Bearer k\" }}\n  auth:\n{}",
                    auth("a", "https://id.example/t")
                ),
                "`headers` sets `Authorization`, which `auth` sets",
                3,
            ),
            (
                format!("  auth:\n{}", auth("a", "http://id.example/t")),
                "plain http to another host",
                5,
            ),
            (
                format!(
                    "  auth:\n{}",
                    auth("a", "https://user:pass-word-1@id.example/t")
                ),
                "carries user:password@",
                5,
            ),
            (
                format!("  auth:\n{}", auth("a", "ftp://id.example/t")),
                "http:// or https://",
                5,
            ),
            (
                format!("  auth:\n{}", auth("${uuid}", "https://id.example/t")),
                "cannot use `${uuid}`",
                6,
            ),
            (
                format!(
                    "  auth:\n{}  second_tenant_auth:\n{}",
                    auth("a", "https://id.example/t"),
                    auth("a", "https://id.example/t")
                ),
                "the second tenant must be another client",
                11,
            ),
        ];
        for (target, want, line) in cases {
            let errs = plan_errors(&format!("suite: s\ntarget:\n{target}{checks}"));
            assert!(
                errs.iter()
                    .any(|e| e.contains(want) && e.starts_with(&format!("{line}:"))),
                "{want} at line {line}: {errs:?}"
            );
            assert!(
                errs.iter()
                    .all(|e| !e.contains("s3cr3t") && !e.contains("pass-word-1")),
                "{errs:?}"
            );
        }
        // A secret from the environment: unset is said by name.
        let errs = plan_errors(&format!(
            "suite: s\ntarget:\n  auth:\n    oauth2:\n      token_url: https://id.example/t\n      client_id: a\n      client_secret: ${{secret.NOPE}}\n{checks}"
        ));
        assert!(
            errs.iter().any(|e| e.contains("secret `NOPE` is not set")),
            "{errs:?}"
        );
    }

    #[test]
    fn target_sink_is_read_and_a_url_needs_a_fixed_port() {
        let build = |src: &str, opts: &PlanOptions| {
            let path = Path::new("s.yaml");
            let file = crate::suite::read::parse_str(path, src).unwrap();
            let loaded = vec![SuiteSource {
                path: path.into(),
                source: src.into(),
                file,
            }];
            build_with_env(&loaded, opts, &|_| None)
        };
        let checks = "checks:\n  - id: a\n    steps: [{ request: { path: / } }]\n";
        let src = format!("suite: s\ntarget:\n  sink: {{ listen: \"127.0.0.1:8089\", url: \"http://localhost:8089/h/\" }}\n{checks}");
        let plan = build(&src, &PlanOptions::default()).unwrap();
        assert_eq!(plan.suites[0].sink.listen.to_string(), "127.0.0.1:8089");
        assert_eq!(
            plan.suites[0].sink.public_url.as_deref(),
            Some("http://localhost:8089/h")
        );
        // The command line wins.
        let opts = PlanOptions {
            sink_listen: Some("127.0.0.2:9000".parse().unwrap()),
            sink_url: Some("http://x:9000".into()),
            ..PlanOptions::default()
        };
        let plan = build(&src, &opts).unwrap();
        assert_eq!(plan.suites[0].sink.listen.to_string(), "127.0.0.2:9000");
        assert_eq!(
            plan.suites[0].sink.public_url.as_deref(),
            Some("http://x:9000")
        );
        let bad = format!(
            "suite: s\ntarget:\n  sink:\n    listen: nowhere\n    url: \"http://x/\"\n{checks}"
        );
        let d = build(&bad, &PlanOptions::default()).unwrap_err();
        let got: Vec<(u64, &str)> = d.0.iter().map(|d| (d.line, d.message.as_str())).collect();
        assert_eq!(got.len(), 2, "{d}");
        assert!(
            got[0].0 == 4 && got[0].1.contains("not an ADDRESS:PORT"),
            "{d}"
        );
        assert!(
            got[1].0 == 5 && got[1].1.contains("needs `sink.listen` with a fixed port"),
            "{d}"
        );
    }
}
