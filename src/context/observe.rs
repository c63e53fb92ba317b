//! Planning the suite's `observe.logs` (`logs::spec`) into a
//! [`LogSource`]: exactly one source, templates fixed at plan time (a Loki
//! header may hold a `${secret.}`, which the redactor learns), every bound
//! checked at its position.

use serde_saphyr::Spanned;

use super::PlanCtx;
use crate::logs::spec::LogsSpec;
use crate::logs::{defaults as d, LineFormat, LogSource, SourceKind};

impl PlanCtx<'_> {
    /// Plans `observe.logs`; `None` (with a diagnostic) when it cannot run.
    pub fn logs_plan(&mut self, spec: &Spanned<LogsSpec>) -> Option<LogSource> {
        let at = spec.referenced;
        let s = &spec.value;
        let given: Vec<&str> = [
            s.file.as_ref().map(|_| "file"),
            s.command.as_ref().map(|_| "command"),
            s.loki.as_ref().map(|_| "loki"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if given.len() != 1 {
            self.error(
                at,
                if given.is_empty() {
                    "`observe.logs` needs a source: `file: PATH`, `command: [PROGRAM, ARG...]` or `loki: URL` with `query:`".to_owned()
                } else {
                    format!("`observe.logs` reads one source, not {}", given.join(" and "))
                },
            );
            return None;
        }
        if s.query.is_some() && s.loki.is_none() {
            self.error(at, "`observe.logs.query` goes with `loki:`");
        }
        if !s.headers.is_empty() && s.loki.is_none() {
            self.error(at, "`observe.logs.headers` go with `loki:`");
        }
        if s.shell.is_some() && s.command.is_none() {
            self.error(at, "`observe.logs.shell` goes with `command:`");
        }
        let kind = if let Some(f) = &s.file {
            let path = self.fixed(&f.value, f.referenced)?;
            if path.trim().is_empty() {
                self.error(f.referenced, "`observe.logs.file` is empty");
                return None;
            }
            SourceKind::File(path.into())
        } else if let Some(c) = &s.command {
            let mut argv = Vec::new();
            for a in &c.value {
                argv.push(self.fixed(a, c.referenced)?);
            }
            let shell = s.shell.unwrap_or(false);
            if argv.is_empty() || argv[0].trim().is_empty() {
                self.error(c.referenced, "`observe.logs.command` names no program");
                return None;
            }
            if shell && argv.len() != 1 {
                self.error(
                    c.referenced,
                    "with `shell: true`, `command` is one string: the shell line",
                );
            }
            SourceKind::Command { argv, shell }
        } else {
            let l = s.loki.as_ref()?;
            let url = self.fixed(&l.value, l.referenced)?.trim().to_owned();
            if !url.starts_with('/') {
                if let Err(e) = super::check_base_url(&url) {
                    self.error(
                        l.referenced,
                        format!(
                            "`{}` {e} (or a path on the target, `/loki`)",
                            crate::redact::mask_userinfo(&url)
                        ),
                    );
                }
            }
            let Some(q) = &s.query else {
                self.error(
                    at,
                    "`observe.logs.loki` needs `query:`, a LogQL selector such as `{app=\"api\"}`",
                );
                return None;
            };
            let query = self.fixed(&q.value, q.referenced)?.trim().to_owned();
            if !query.starts_with('{') || query.len() > 4096 {
                self.error(
                    q.referenced,
                    "`query` must be a LogQL selector (`{label=\"value\"}`, a pipeline may follow) of at most 4096 characters",
                );
            }
            let headers = s
                .headers
                .iter()
                .filter_map(|(k, v)| {
                    let (name, t) = self.header(k, v);
                    match t.as_literal() {
                        Some(v) => Some((name, v)),
                        None => {
                            self.error(v.referenced, "a Loki header is fixed when the suite is planned (`${var.}`, `${env.}`, `${secret.}`)");
                            None
                        }
                    }
                })
                .collect();
            SourceKind::Loki {
                url,
                query,
                headers,
            }
        };
        let mut field = |v: &Option<Spanned<String>>, def: &str, what: &str| -> String {
            match v {
                Some(f) if f.value.trim().is_empty() || f.value.split('.').any(str::is_empty) => {
                    self.error(
                        f.referenced,
                        format!(
                            "`observe.logs.{what}` must name a JSON field (dotted: `trace.id`)"
                        ),
                    );
                    def.to_owned()
                }
                Some(f) => f.value.trim().to_owned(),
                None => def.to_owned(),
            }
        };
        let format = LineFormat {
            trace_id: field(&s.trace_id, d::TRACE_ID_FIELD, "trace_id"),
            request_id: field(&s.request_id, d::REQUEST_ID_FIELD, "request_id"),
            message: field(&s.message, d::MESSAGE_FIELD, "message"),
        };
        let max_bytes = match &s.max_bytes {
            None => d::MAX_BYTES,
            Some(v) => match crate::model::scalar::parse_bytes(&v.value.0) {
                Ok(n) if (1024..=d::MAX_BYTES_MAX).contains(&n) => n,
                Ok(_) => {
                    self.error(
                        v.referenced,
                        "`observe.logs.max_bytes` must be from 1KiB to 256MiB",
                    );
                    d::MAX_BYTES
                }
                Err(e) => {
                    self.error(v.referenced, format!("`observe.logs.max_bytes`: {e}"));
                    d::MAX_BYTES
                }
            },
        };
        let max_lines = match &s.max_lines {
            None => d::MAX_LINES,
            Some(n) if (1..=1_000_000).contains(&n.value) => n.value,
            Some(n) => {
                self.error(
                    n.referenced,
                    "`observe.logs.max_lines` must be from 1 to 1000000",
                );
                d::MAX_LINES
            }
        };
        let timeout = match &s.timeout {
            None => d::TIMEOUT,
            Some(t)
                if t.value.0 >= std::time::Duration::from_millis(100)
                    && t.value.0 <= d::TIMEOUT_MAX =>
            {
                t.value.0
            }
            Some(t) => {
                self.error(
                    t.referenced,
                    "`observe.logs.timeout` must be from 100ms to 2m",
                );
                d::TIMEOUT
            }
        };
        Some(LogSource {
            kind,
            format,
            max_bytes,
            max_lines,
            timeout,
        })
    }

    /// A value fixed when the suite is planned (`${var.}`, `${env.}`, `${secret.}`).
    fn fixed(&mut self, text: &str, at: serde_saphyr::Location) -> Option<String> {
        let t = self.template_at(text, at);
        match t.as_literal() {
            Some(v) => Some(v),
            None => {
                self.error(
                    at,
                    "this value may use `${var.}`, `${env.}` and `${secret.}`, fixed when the suite is planned",
                );
                None
            }
        }
    }
}
