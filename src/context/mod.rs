//! The planning context every family plans with: the file being planned,
//! its variables, secrets and captures, the suite's profile, and the
//! diagnostics found so far (`PlanCtx`); the planning of the shared request /
//! expect / capture grammar (`request`); what a check may use while it runs
//! (`CheckContext`); the request figures a plan states (`budget`); and the
//! exhaustion of the limit the runner hands from check to check (`block`);
//! the ids the run has seen, which uniqueness checks count (`seen`).
//!
//! It sits below the families and above the spec vocabulary: the driver
//! (`plan`) makes one `PlanCtx` per file and hands it to every family; a
//! family never sees the driver, and the driver never looks into a family's
//! plan except through the registry (`families`).

pub mod block;
pub mod budget;
mod check;
mod observe;
pub mod request;
pub mod seen;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_saphyr::{Location, Spanned};

use crate::model::keyword::Keyword;
use crate::model::profile::Profile;
use crate::model::scalar::Scalar;

pub use crate::model::template::{Resolver, Scope, Template};
use crate::redact::Redactor;
use crate::spec::{Diagnostic, Diagnostics};
pub use check::{
    is_loopback, remote_because, CheckContext, Volume, HIGH_VOLUME_CONCURRENCY,
    HIGH_VOLUME_REQUESTS,
};
pub use request::{
    BodyPlan, CapturePlan, CaptureSource, CounterPlan, ExpectPlan, HeaderCheck, JsonCheck,
    JsonTemplate, RequestPlan, UrlPlan,
};

/// The longest `after:` cooldown or `wait:` step: a longer pause is a mistake, not a plan.
pub const MAX_PAUSE: Duration = Duration::from_secs(3600);

/// Reads an environment variable (the process environment, or a test's map).
pub type EnvLookup<'a> = Box<dyn Fn(&str) -> Option<String> + 'a>;

/// State while planning one file.
pub struct PlanCtx<'a> {
    pub file: &'a Path,
    pub source: &'a str,
    pub vars: HashMap<String, String>,
    /// Captures visible to the step being planned.
    pub captures: HashSet<String>,
    pub redactor: Redactor,
    pub diags: Diagnostics,
    /// The suite's `profile:`: which reading of the specs defaults follow.
    pub profile: Profile,
    /// The suite's `contract:` document, loaded before its checks are
    /// planned (the `contract.*` kinds judge against it).
    pub contract: Option<std::sync::Arc<crate::contract::Contract>>,
    /// The suite's `observe.logs`, planned before its checks (the log
    /// checks read it).
    pub logs: Option<crate::logs::LogSource>,
    env: EnvLookup<'a>,
}

impl<'a> PlanCtx<'a> {
    pub fn new(file: &'a Path, source: &'a str, redactor: Redactor, env: EnvLookup<'a>) -> Self {
        PlanCtx {
            file,
            source,
            vars: HashMap::new(),
            captures: HashSet::new(),
            redactor,
            diags: Diagnostics::default(),
            profile: Profile::default(),
            contract: None,
            logs: None,
            env,
        }
    }

    pub fn error(&mut self, loc: Location, msg: impl Into<String>) {
        self.diags
            .push(Diagnostic::new(self.file, self.source, loc, msg));
    }

    /// Plans a header: its name must be a valid HTTP field name and its
    /// value may not hold CR, LF or NUL (it could never be sent, or would
    /// split the request). A value that holds a secret has its derived forms
    /// (base64, a Basic credential) registered with the redactor.
    /// A header name may be a `${var.NAME}` (a target's own test-hook header,
    /// named once in `vars:`); it is resolved here, so it is returned.
    pub fn header(&mut self, name: &str, value: &Spanned<Scalar>) -> (String, Template) {
        let name = self.header_name_text(name, value.referenced);
        let t = self.header_value(&name, value);
        (name, t)
    }

    /// The header name as sent: literal, or made of suite variables.
    fn header_name_text(&mut self, name: &str, at: Location) -> String {
        if !name.contains("${") {
            return name.to_owned();
        }
        match self.template_at(name, at).as_literal() {
            Some(n) => n,
            None => {
                self.error(
                    at,
                    format!(
                        "header name `{}` may only use `${{var.NAME}}` placeholders (it is fixed when the suite is planned)",
                        crate::redact::quote(name)
                    ),
                );
                name.to_owned()
            }
        }
    }

    fn header_value(&mut self, name: &str, value: &Spanned<Scalar>) -> Template {
        if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            self.error(
                value.referenced,
                format!(
                    "`{}` is not a valid HTTP header name",
                    crate::redact::quote(name)
                ),
            );
        }
        let text = &value.value.0;
        if text.contains(['\r', '\n', '\0']) {
            self.error(
                value.referenced,
                format!(
                    "the value of header `{name}` holds a line break or NUL, which HTTP cannot carry"
                ),
            );
        }
        let t = self.template_at(text, value.referenced);
        if let Some(v) = t.as_literal() {
            self.redactor.add_derived_header(&v);
        }
        t
    }

    /// The value of a keyword field (`policy: required`): `default` when
    /// absent; an unknown word is reported at its position ("unknown {what}
    /// `x`: use one of ...") and `default` stands in, so planning goes on and
    /// finds the suite's other problems too.
    pub fn keyword<T: Copy + DeserializeOwned>(
        &mut self,
        k: Option<&Spanned<Keyword<T>>>,
        what: &str,
        default: T,
    ) -> T {
        let Some(k) = k else { return default };
        match k.value.clone().value(what) {
            Ok(v) => v,
            Err(e) => {
                self.error(k.referenced, e);
                default
            }
        }
    }

    /// [`PlanCtx::keyword`] with the default written as its word, as the
    /// family's `defaults` and `KINDS` table write it (one source).
    pub fn keyword_or<T: Copy + DeserializeOwned>(
        &mut self,
        k: Option<&Spanned<Keyword<T>>>,
        what: &str,
        default: &str,
    ) -> T {
        let default = Keyword::<T>::read(default)
            .value(what)
            .unwrap_or_else(|e| panic!("a KINDS default must name a variant: {e}"));
        self.keyword(k, what, default)
    }

    pub fn resolver(&self) -> Resolver<'_> {
        Resolver {
            vars: &self.vars,
            captures: &self.captures,
            env: &*self.env,
            redactor: &self.redactor,
        }
    }
}

/// A base URL tminus can send to: http(s), a host, and nothing after the path.
pub fn check_base_url(url: &str) -> Result<(), String> {
    let u = request::http_url(url)?;
    if u.query().is_some() || u.fragment().is_some() {
        return Err("may not carry a query or fragment (paths are joined to it)".into());
    }
    Ok(())
}
