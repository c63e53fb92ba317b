//! Plans of the client-certification kinds: the command to run, the upstream
//! scenario(s) to serve it (a kind's default, or the suite's `upstream:`
//! script), how many clients run at once, when to stop a client early, and
//! the judge with its parameters.

use std::path::PathBuf;
use std::time::Duration;

use serde_saphyr::{Location, Spanned};

use crate::context::PlanCtx;
use crate::families::client::spec::{defaults, *};
pub use crate::families::client::spec::{KeyFormat, Policy503};
use crate::families::client::timing::LEAST_CONTROL;
use crate::model::template::{Scope, Template, UPSTREAM_PLACEHOLDERS};
use crate::upstream::{
    Action, Herd, Inject, RateWindow, Reply, RetryAfterForm, RouteScript, Script, Step,
};

/// The suite variable holding the path of the running tminus executable.
pub const TMINUS_EXE_VAR: &str = "tminus_exe";

/// The client command. `argv` and `env` are templates whose only run-time
/// parts are `${upstream.url|host|port}` (fresh ids are fixed at plan time),
/// rendered per client with [`CommandPlan::scope`].
#[derive(Debug, Clone)]
pub struct CommandPlan {
    pub argv: Vec<Template>,
    pub env: Vec<(String, Template)>,
    pub cwd: Option<PathBuf>,
    pub timeout: Duration,
    pub url_env: String,
}

impl CommandPlan {
    /// The values of the upstream placeholders for a client given `url`
    /// (its base URL) on an upstream listening at `addr`.
    pub fn scope(url: &str, addr: std::net::SocketAddr) -> Scope {
        let mut s = Scope::new();
        s.insert(UPSTREAM_PLACEHOLDERS[0].into(), url.to_owned());
        s.insert(UPSTREAM_PLACEHOLDERS[1].into(), addr.ip().to_string());
        s.insert(UPSTREAM_PLACEHOLDERS[2].into(), addr.port().to_string());
        s
    }

    /// The command line as written, placeholders shown as placeholders.
    pub fn shown(&self) -> String {
        let mut s = Scope::new();
        for n in UPSTREAM_PLACEHOLDERS {
            s.insert(n.into(), format!("${{{n}}}"));
        }
        let v: Vec<String> = self.argv.iter().map(|a| a.render(&s)).collect();
        v.join(" ")
    }

    /// True when some argv or env value uses the upstream placeholder `name`.
    pub fn uses(&self, name: &str) -> bool {
        self.argv
            .iter()
            .chain(self.env.iter().map(|(_, v)| v))
            .any(|t| t.uses(name))
    }
}

/// One scenario: an upstream with `clients` clients run against it at once.
#[derive(Debug, Clone)]
pub struct ClientRun {
    pub label: String,
    pub script: Script,
    pub clients: usize,
}

#[derive(Debug, Clone)]
pub enum Judge {
    RetryAfter {
        tolerance: Duration,
        /// Waits needed to pass (one per answer with Retry-After).
        samples: usize,
        /// `form: http-date`: a second run answers the seconds form once,
        /// the control that tells "does not parse the date" from "never
        /// retries" (`understands_http_date`).
        date: bool,
    },
    Exponential {
        growth: f64,
        /// Least difference of the later half's mean gap over the earlier's.
        min_increase: Duration,
        max_gap: Duration,
        /// Gaps judged per client.
        min_gaps: usize,
    },
    Jitter {
        /// Least width of the narrowest window holding half the retry offsets.
        min_spread: Duration,
    },
    Bounded {
        max_attempts: usize,
        max_total: Duration,
    },
    NoRetry4xx {
        /// The final statuses: the first answer with one of them must not be re-sent.
        statuses: Vec<u16>,
    },
    Retry503 {
        policy: Policy503,
        /// The suite's `upstream:` script: a case it does not serve is skipped.
        scripted: bool,
    },
    IdempotencyKeys {
        format: KeyFormat,
        /// `None`: follow the client (distinct keys skipped for one operation).
        min_operations: Option<usize>,
    },
    SlowsBeforeLimit {
        limit: u32,
        window: Duration,
        min_requests: usize,
    },
    Amplification {
        /// Logical operations; `None`: distinct Idempotency-Keys.
        operations: Option<usize>,
        max: f64,
    },
    Replay {
        header: String,
        value: String,
        operations: usize,
    },
    /// TRC-C01: every attempt's traceparent, and the retries of one operation.
    Traceparent,
    /// POLL-003: a cursor list walked to its end under a rate limit.
    Polling {
        cursor_param: String,
        pages: usize,
        limit: u32,
        window: Duration,
    },
}

#[derive(Debug, Clone)]
pub struct ClientPlan {
    pub command: CommandPlan,
    pub runs: Vec<ClientRun>,
    pub judge: Judge,
    /// Kill a client once it has made more than this many attempts (the verdict is known).
    pub stop_after_attempts: Option<usize>,
    /// Kill a client after this long (the verdict is known).
    pub stop_after_time: Option<Duration>,
    /// Clients of a known timing run with the first run's herd, whose
    /// spread measures the machine's own noise (`client.jitter`).
    pub control: Option<ControlGroup>,
}

/// The control group of a herd: copies of tminus's reference client without
/// jitter (`tminus reference client --defect client-no-jitter`), numbered
/// after the herd and answered by the script's last route (an upstream
/// [`Herd`]'s `control_from`), so they retry exactly Retry-After after their
/// answer and any spread they show is the machine's scheduling.
#[derive(Debug, Clone)]
pub struct ControlGroup {
    pub command: CommandPlan,
    pub clients: usize,
}

/// The path the control group asks for (answered whatever it is).
pub const CONTROL_PATH: &str = "/tminus/control";

/// A default scenario: one route that answers every mutating request
/// (narrowed by `match:`, [`PlanCtx::script`]).
pub(super) fn route(steps: Vec<Step>, then: Step) -> Script {
    Script {
        routes: vec![RouteScript {
            method: None,
            path: None,
            steps,
            then,
            rate_limit: None,
            inject: None,
        }],
        hang_cap: None,
        herd: None,
    }
}

pub(super) fn created() -> Step {
    Step::reply(Reply {
        body: r#"{"id":"msg_1","status":"queued"}"#.into(),
        ..Reply::status(201)
    })
}

pub(super) fn one(label: &str, script: Script) -> Vec<ClientRun> {
    vec![ClientRun {
        label: label.into(),
        script,
        clients: 1,
    }]
}

fn form(f: RetryAfterFormSpec) -> RetryAfterForm {
    match f {
        RetryAfterFormSpec::Seconds => RetryAfterForm::Seconds,
        RetryAfterFormSpec::HttpDate => RetryAfterForm::HttpDate,
    }
}

/// The control group's command: this tminus's reference client with
/// `args` (a known timing: no jitter, or a constant backoff), the base URL
/// in `TMINUS_UPSTREAM_URL`.
fn control_command(timeout: Duration, args: &[&str]) -> CommandPlan {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "tminus".into());
    let mut argv = vec![exe.as_str(), "reference", "client"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--path", CONTROL_PATH]);
    CommandPlan {
        argv: argv.iter().map(|a| Template::literal(*a)).collect(),
        env: Vec::new(),
        cwd: None,
        timeout,
        url_env: "TMINUS_UPSTREAM_URL".into(),
    }
}

/// Adds `control` to the first run's herd: its own route (the last, at
/// [`CONTROL_PATH`]) answering `steps` then 201, the clients numbered after
/// the herd's, all held until every one has asked.
fn with_control(p: &mut ClientPlan, control: ControlGroup, steps: Vec<Step>) {
    let script = &mut p.runs[0].script;
    script.routes.push(RouteScript {
        method: Some("POST".into()),
        path: Some(CONTROL_PATH.into()),
        steps,
        then: Step::reply(Reply::status(201)),
        rate_limit: None,
        inject: None,
    });
    if let Some(h) = script.herd.as_mut() {
        let k = h.clients;
        h.control_from = Some(k);
        h.clients = k + control.clients;
    }
    p.control = Some(control);
}

pub(super) fn dur(d: &Option<crate::model::scalar::DurationValue>, default: Duration) -> Duration {
    d.map(|d| d.0).unwrap_or(default)
}

impl PlanCtx<'_> {
    pub(super) fn command(&mut self, c: &CommandSpec, at: Location) -> CommandPlan {
        // `${var.tminus_exe}` is this binary unless the suite or --var sets it.
        let injected = !self.vars.contains_key(TMINUS_EXE_VAR);
        if injected {
            let exe = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "tminus".into());
            self.vars.insert(TMINUS_EXE_VAR.into(), exe);
        }
        // The upstream's address is admitted here only (argv and env), as
        // run-time captures; the captures are cleared again before `cwd`.
        let before = self.captures.clone();
        self.captures
            .extend(UPSTREAM_PLACEHOLDERS.iter().map(|n| n.to_string()));
        let argv: Vec<Template> = c
            .argv
            .iter()
            .map(|a| self.template_at(&a.value.0, a.referenced).freeze_fresh())
            .collect();
        let env = c
            .env
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    self.template_at(&v.value.0, v.referenced).freeze_fresh(),
                )
            })
            .collect();
        self.captures = before;
        let scope = Scope::new();
        let cwd = c
            .cwd
            .as_ref()
            .map(|d| PathBuf::from(self.template(d).render(&scope)));
        if injected {
            self.vars.remove(TMINUS_EXE_VAR);
        }
        if argv
            .first()
            .is_none_or(|a| a.render(&Scope::new()).trim().is_empty())
        {
            self.error(at, "`client.argv` needs at least the program to run");
        }
        let url_env = c
            .url_env
            .clone()
            .unwrap_or_else(|| defaults::URL_ENV.into());
        if url_env.is_empty() || url_env.contains('=') {
            self.error(
                at,
                format!("`client.url_env` `{url_env}` is not a valid variable name"),
            );
        }
        let timeout = dur(&c.timeout, defaults::CLIENT_TIMEOUT);
        if timeout.is_zero() {
            self.error(at, "`client.timeout` must be above zero");
        }
        CommandPlan {
            argv,
            env,
            cwd,
            timeout,
            url_env,
        }
    }

    fn step(&mut self, s: &StepSpec, at: Location) -> Step {
        let fault = s
            .fault
            .as_ref()
            .map(|f| self.keyword(Some(f), "fault", FaultSpec::Close));
        let action = match fault {
            Some(FaultSpec::Close) => Action::Close,
            Some(FaultSpec::Hang) => Action::Hang,
            None => {
                let status = s.status.unwrap_or(200);
                if !(100..=599).contains(&status) {
                    self.error(at, format!("status {status} is not between 100 and 599"));
                }
                let (body, ct) = match (&s.json, &s.body) {
                    (Some(_), Some(_)) => {
                        self.error(at, "give `json` or `body`, not both");
                        (String::new(), "application/json".to_owned())
                    }
                    (Some(j), None) => (j.to_string(), "application/json".to_owned()),
                    (None, Some(b)) => (b.clone(), "text/plain".to_owned()),
                    (None, None) => (
                        format!("{{\"status\":{status}}}"),
                        "application/json".to_owned(),
                    ),
                };
                let form = form(self.keyword(
                    s.retry_after_form.as_ref(),
                    "retry_after_form",
                    RetryAfterFormSpec::Seconds,
                ));
                Action::Reply(Reply {
                    status,
                    headers: s
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.0.clone()))
                        .collect(),
                    body,
                    content_type: s.content_type.clone().unwrap_or(ct),
                    retry_after: s.retry_after.map(|d| (d.0, form)),
                })
            }
        };
        Step {
            action,
            delay: dur(&s.delay, Duration::ZERO),
        }
    }

    /// The scenario of a run: the suite's `upstream:` if given, else the
    /// kind's `default` narrowed by `match:` (one or the other, not both).
    pub(super) fn script(
        &mut self,
        u: &Option<UpstreamSpec>,
        m: &Option<Spanned<MatchSpec>>,
        default: Script,
    ) -> Script {
        let Some(u) = u else {
            return self.narrow(m, default);
        };
        if let Some(m) = m {
            self.error(
                m.referenced,
                "`match` narrows the kind's default scenario; with `upstream:` give each route its `method` and `path`",
            );
        }
        let mut routes = Vec::new();
        for r in &u.routes {
            let mut steps = Vec::new();
            for s in &r.responses {
                let step = self.step(&s.value, s.referenced);
                for _ in 0..s.value.repeat.unwrap_or(1).min(10_000) {
                    steps.push(step.clone());
                }
            }
            let then = match &r.then {
                Some(t) => self.step(&t.value, t.referenced),
                None => created(),
            };
            routes.push(RouteScript {
                method: Some(
                    r.method
                        .clone()
                        .unwrap_or_else(|| "POST".into())
                        .to_uppercase(),
                ),
                path: Some(r.path.clone()),
                steps,
                then,
                rate_limit: r.rate_limit.as_ref().map(|l| RateWindow {
                    limit: l.limit,
                    window: l.window.0,
                }),
                inject: None,
            });
        }
        Script {
            routes,
            hang_cap: u.hang_cap.map(|d| d.0),
            herd: None,
        }
    }

    /// `match:` applied to every route of a default scenario.
    fn narrow(&mut self, m: &Option<Spanned<MatchSpec>>, mut script: Script) -> Script {
        let Some(m) = m else { return script };
        let method = m.value.method.as_ref().map(|x| x.trim().to_uppercase());
        if let Some(x) = &method {
            if axum::http::Method::from_bytes(x.as_bytes()).is_err() || x.is_empty() {
                self.error(
                    m.referenced,
                    format!("`match.method` `{x}` is not an HTTP method"),
                );
            }
        }
        let path = m.value.path.clone();
        if let Some(p) = &path {
            if !p.starts_with('/') {
                self.error(
                    m.referenced,
                    format!("`match.path` `{p}` must start with `/`"),
                );
            }
        }
        for r in &mut script.routes {
            if method.is_some() {
                r.method = method.clone();
            }
            if path.is_some() {
                r.path = path.clone();
            }
        }
        script
    }

    pub(super) fn client_plan(
        &mut self,
        command: CommandPlan,
        runs: Vec<ClientRun>,
        judge: Judge,
    ) -> ClientPlan {
        ClientPlan {
            command,
            runs,
            judge,
            stop_after_attempts: None,
            stop_after_time: None,
            control: None,
        }
    }

    pub fn client_respects_retry_after(&mut self, s: &RespectsRetryAfterSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        let form = form(self.keyword_or(s.form.as_ref(), "form", defaults::FORM));
        // Long enough that a client's own short backoff cannot meet it by
        // chance (the rule's error rates, `timing`).
        let ra = dur(
            &s.retry_after,
            match form {
                RetryAfterForm::Seconds => defaults::RETRY_AFTER_WAIT,
                RetryAfterForm::HttpDate => defaults::RETRY_AFTER_WAIT_DATE,
            },
        );
        let samples = s.samples.unwrap_or(defaults::SAMPLES).clamp(1, 20) as usize;
        if s.samples == Some(0) {
            self.error(s.id.referenced, "`samples` must be at least 1");
        }
        let status = s.status.unwrap_or(defaults::LIMITED_STATUS);
        let limited = Step::reply(Reply::status(status).retry_after(ra, form));
        let default = route(vec![limited; samples], created());
        let script = self.script(&s.upstream, &s.r#match, default);
        let date = form == RetryAfterForm::HttpDate;
        let judge = Judge::RetryAfter {
            tolerance: dur(&s.tolerance, defaults::TOLERANCE),
            samples,
            date,
        };
        let mut runs = one("retry-after", script);
        // The control of `understands_http_date`: the same operation
        // answered once with the seconds form. Only for the default
        // scenario: a suite's own `upstream:` is not rewritten.
        if date && s.upstream.is_none() {
            let once = Step::reply(
                Reply::status(status).retry_after(defaults::RETRY_AFTER, RetryAfterForm::Seconds),
            );
            let mut control = runs[0].script.clone();
            for r in &mut control.routes {
                r.steps = vec![once.clone()];
            }
            runs.extend(one("control-seconds", control));
        }
        let mut p = self.client_plan(cmd, runs, judge);
        // One attempt per sample and the one after it decide it.
        p.stop_after_attempts = Some(samples + 1);
        p
    }

    pub fn client_exponential_backoff(&mut self, s: &ExponentialBackoffSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        self.herd_url_only(
            &cmd,
            &s.client,
            s.id.referenced,
            "client.exponential_backoff",
        );
        let n = s.failures.unwrap_or(defaults::FAILURES).clamp(1, 1000) as usize;
        let default = route(vec![Step::reply(Reply::status(429)); n], created());
        let script = self.script(&s.upstream, &s.r#match, default);
        let k = self.herd_size(s.clients, defaults::BACKOFF_CLIENTS, s.id.referenced);
        let growth = s.growth.unwrap_or(defaults::GROWTH);
        if !(growth.is_finite() && growth >= 1.0) {
            self.error(s.id.referenced, "`growth` must be a number of at least 1");
        }
        let min_gaps = s.min_gaps.map_or(n, |g| g as usize);
        if !(2..=n).contains(&min_gaps) {
            self.error(
                s.id.referenced,
                format!("`min_gaps` must be between 2 and `failures` ({n})"),
            );
        }
        let judge = Judge::Exponential {
            growth,
            min_increase: dur(&s.min_increase, defaults::MIN_INCREASE),
            max_gap: dur(&s.max_gap, defaults::MAX_GAP),
            min_gaps: min_gaps.clamp(2, n.max(2)),
        };
        // Every client has started before the first 429 goes out, so the
        // startup of the slower ones is not measured as the first gaps.
        let mut p = self.herd_plan(cmd, script, k, judge);
        // The control group: copies of the reference client with a constant
        // backoff, told 429 as often on their own route. A loaded machine
        // stretches later gaps of every process alike; the growth the
        // control shows is that noise, and a herd's growth must exceed it.
        let c = defaults::BACKOFF_CONTROL_CLIENTS as usize;
        let attempts = (n + 2).to_string();
        let control = ControlGroup {
            command: control_command(
                p.command.timeout,
                &[
                    "--defect",
                    "client-fixed-backoff",
                    "--base-delay",
                    "10ms",
                    "--max-attempts",
                    &attempts,
                ],
            ),
            clients: c,
        };
        with_control(&mut p, control, vec![Step::reply(Reply::status(429)); n]);
        p
    }

    /// `k` copies of the client against one upstream whose first answers
    /// wait for the whole herd (see [`Herd`]).
    fn herd_plan(
        &mut self,
        cmd: CommandPlan,
        mut script: Script,
        k: usize,
        judge: Judge,
    ) -> ClientPlan {
        script.herd = Some(Herd {
            clients: k,
            cap: defaults::HERD_CAP,
            stagger: defaults::HERD_STAGGER,
            control_from: None,
        });
        let run = ClientRun {
            label: "herd".into(),
            script,
            clients: k,
        };
        self.client_plan(cmd, vec![run], judge)
    }

    /// K clients share one upstream and are told apart by the `/c/n`
    /// prefix of their base URL; a bare host and port would merge them.
    fn herd_url_only(&mut self, cmd: &CommandPlan, spec: &CommandSpec, at: Location, kind: &str) {
        for n in &UPSTREAM_PLACEHOLDERS[1..] {
            if cmd.uses(n) {
                self.error(
                    spec.argv.first().map(|a| a.referenced).unwrap_or(at),
                    format!("`{kind}` runs several clients against one upstream, told apart by their base URL: use `${{upstream.url}}`, not `${{{n}}}`"),
                );
            }
        }
    }

    /// The herd's size: `clients`, or `default`; 2 to 500.
    fn herd_size(&mut self, clients: Option<u32>, default: u32, at: Location) -> usize {
        let k = clients.unwrap_or(default) as usize;
        if !(2..=500).contains(&k) {
            self.error(at, "`clients` must be between 2 and 500");
        }
        k.clamp(2, 500)
    }

    pub fn client_jitter(&mut self, s: &JitterSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        self.herd_url_only(&cmd, &s.client, s.id.referenced, "client.jitter");
        let k = self.herd_size(s.clients, defaults::CLIENTS, s.id.referenced);
        let ra = dur(&s.retry_after, defaults::RETRY_AFTER);
        let default = route(
            vec![Step::reply(
                Reply::status(429).retry_after(ra, RetryAfterForm::Seconds),
            )],
            created(),
        );
        let script = self.script(&s.upstream, &s.r#match, default);
        let min_spread = dur(&s.min_spread, defaults::MIN_SPREAD);
        if min_spread.is_zero() {
            self.error(s.id.referenced, "`min_spread` must be above zero");
        }
        let c = s.control_clients.unwrap_or(defaults::CONTROL_CLIENTS) as usize;
        if !(LEAST_CONTROL..=100).contains(&c) {
            self.error(
                s.id.referenced,
                format!("`control_clients` must be between {LEAST_CONTROL} and 100: without them the machine's noise is not measured, and no spread can pass"),
            );
        }
        let c = c.clamp(LEAST_CONTROL, 100);
        let control = ControlGroup {
            command: control_command(
                cmd.timeout,
                &["--defect", "client-no-jitter", "--max-attempts", "3"],
            ),
            clients: c,
        };
        let mut p = self.herd_plan(cmd, script, k, Judge::Jitter { min_spread });
        // The control group: its own route, last, the same Retry-After.
        with_control(
            &mut p,
            control,
            vec![Step::reply(
                Reply::status(429).retry_after(ra, RetryAfterForm::Seconds),
            )],
        );
        p.stop_after_attempts = Some(2);
        p
    }

    pub fn client_bounded(&mut self, s: &BoundedSpec) -> ClientPlan {
        let mut cmd = self.command(&s.client, s.id.referenced);
        // Its own kill timeout: the family's 20 s is below the default
        // `max_total`, which admits policies that sleep over 30 s.
        if s.client.timeout.is_none() {
            cmd.timeout = defaults::BOUNDED_CLIENT_TIMEOUT;
        }
        // Retry-After on every answer: the pacing between attempts is judged
        // against it.
        let reply = Reply::status(s.status.unwrap_or(defaults::LIMITED_STATUS)).retry_after(
            dur(&s.retry_after, defaults::BOUNDED_RETRY_AFTER),
            RetryAfterForm::Seconds,
        );
        let step = Step::reply(reply);
        let default = route(Vec::new(), step);
        let script = self.script(&s.upstream, &s.r#match, default);
        let max_attempts = s.max_attempts.unwrap_or(defaults::MAX_ATTEMPTS).max(1) as usize;
        let max_total = dur(&s.max_total, defaults::MAX_TOTAL);
        if max_total >= cmd.timeout {
            self.error(
                s.id.referenced,
                format!(
                    "`max_total` ({}) must be below `client.timeout` ({}) to tell a bounded client from a killed one",
                    crate::fmt_duration(max_total),
                    crate::fmt_duration(cmd.timeout)
                ),
            );
        }
        let mut p = self.client_plan(
            cmd,
            one("always-failing", script),
            Judge::Bounded {
                max_attempts,
                max_total,
            },
        );
        p.stop_after_attempts = Some(max_attempts);
        p.stop_after_time = Some(max_total);
        p
    }

    pub fn client_no_retry_on_4xx(&mut self, s: &NoRetryOn4xxSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        let statuses = s
            .statuses
            .clone()
            .unwrap_or_else(|| defaults::NO_RETRY_STATUSES.to_vec());
        if statuses.is_empty() || statuses.iter().any(|s| !(400..=499).contains(s)) {
            self.error(s.id.referenced, "`statuses` must list 4xx codes");
        }
        let runs = match &s.upstream {
            // The suite's script is the one scenario; the judge finds the 4xx in it.
            Some(_) => one(
                "scripted upstream",
                self.script(&s.upstream, &s.r#match, Script::default()),
            ),
            None => statuses
                .iter()
                .map(|st| ClientRun {
                    label: st.to_string(),
                    script: self.narrow(
                        &s.r#match,
                        route(vec![Step::reply(Reply::status(*st))], created()),
                    ),
                    clients: 1,
                })
                .collect(),
        };
        let scripted = s.upstream.is_some();
        let mut p = self.client_plan(cmd, runs, Judge::NoRetry4xx { statuses });
        // A script may put other requests first: let its client run to the end.
        p.stop_after_attempts = (!scripted).then_some(1);
        p
    }

    pub fn client_retry_503_policy(&mut self, s: &Retry503PolicySpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        let policy = self.keyword_or(s.policy.as_ref(), "policy", defaults::POLICY_503);
        let ra = dur(&s.retry_after, defaults::RETRY_AFTER);
        let runs = match &s.upstream {
            // The judge reads from the 503 answered whether it carried Retry-After.
            Some(_) => one(
                "scripted upstream",
                self.script(&s.upstream, &s.r#match, Script::default()),
            ),
            None => vec![
                ClientRun {
                    label: "503 without Retry-After".into(),
                    script: self.narrow(
                        &s.r#match,
                        route(vec![Step::reply(Reply::status(503))], created()),
                    ),
                    clients: 1,
                },
                ClientRun {
                    label: "503 with Retry-After".into(),
                    script: self.narrow(
                        &s.r#match,
                        route(
                            vec![Step::reply(
                                Reply::status(503).retry_after(ra, RetryAfterForm::Seconds),
                            )],
                            created(),
                        ),
                    ),
                    clients: 1,
                },
            ],
        };
        let scripted = s.upstream.is_some();
        let mut p = self.client_plan(cmd, runs, Judge::Retry503 { policy, scripted });
        p.stop_after_attempts = (!scripted).then_some(2);
        p
    }

    pub fn client_idempotency_keys(&mut self, s: &IdempotencyKeysSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        let default_format = self
            .profile
            .pick(defaults::KEY_FORMAT_STANDARD, defaults::KEY_FORMAT);
        let format = self.keyword_or(s.key_format.as_ref(), "key_format", default_format);
        // IDEM-C02 (dropped connection, 503 + Retry-After) and IDEM-C03 (409 in progress).
        let default = route(
            vec![
                Step::fault(Action::Close),
                Step::reply(Reply {
                    body: r#"{"error":{"code":"IDEMPOTENCY_IN_PROGRESS","message":"a request with this key is in progress"}}"#.into(),
                    ..Reply::status(409)
                }),
                Step::reply(Reply::status(503).retry_after(Duration::from_secs(1), RetryAfterForm::Seconds)),
            ],
            created(),
        );
        let script = self.script(&s.upstream, &s.r#match, default);
        let judge = Judge::IdempotencyKeys {
            format,
            min_operations: s.min_operations.map(|n| n.max(1) as usize),
        };
        self.client_plan(cmd, one("operations", script), judge)
    }

    pub fn client_slows_before_limit(&mut self, s: &SlowsBeforeLimitSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        let limit = s.limit.unwrap_or(defaults::LIMIT).max(1);
        let window = dur(&s.window, defaults::WINDOW);
        if window < Duration::from_millis(500) {
            self.error(s.id.referenced, "`window` must be at least 500ms");
        }
        let mut script = self.narrow(&s.r#match, route(Vec::new(), created()));
        script.routes[0].rate_limit = Some(RateWindow { limit, window });
        let min_requests = s.min_requests.unwrap_or(limit + 1) as usize;
        let judge = Judge::SlowsBeforeLimit {
            limit,
            window,
            min_requests,
        };
        self.client_plan(cmd, one("rate-limited", script), judge)
    }

    pub fn client_retry_amplification(&mut self, s: &RetryAmplificationSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        let share = s.failure_share.unwrap_or(defaults::FAILURE_SHARE);
        if !(share > 0.0 && share < 1.0) {
            self.error(
                s.id.referenced,
                "`failure_share` must be above 0 and below 1",
            );
        }
        let status = s.status.unwrap_or(defaults::FAILURE_STATUS);
        if !(400..=599).contains(&status) {
            self.error(s.id.referenced, "`status` must be a 4xx or 5xx code");
        }
        let mut reply = Reply::status(status);
        match s
            .retry_after
            .as_ref()
            .map(|r| (r.value.0.trim(), r.referenced))
        {
            None => reply = reply.retry_after(defaults::RETRY_AFTER, RetryAfterForm::Seconds),
            Some(("none", _)) => {}
            Some((v, at)) => match crate::model::scalar::parse_duration(v) {
                Ok(d) => reply = reply.retry_after(d, RetryAfterForm::Seconds),
                Err(e) => self.error(at, format!("`retry_after`: {e} (or `none`)")),
            },
        }
        let inject = Inject {
            share: share.clamp(0.0001, 0.9999),
            step: Step::reply(reply),
            hold: dur(&s.hold, defaults::HOLD),
        };
        let mut script = self.script(&s.upstream, &s.r#match, route(Vec::new(), created()));
        // The injected failures run over every scripted route.
        for r in &mut script.routes {
            r.inject = Some(inject.clone());
        }
        let max = s.max_amplification.unwrap_or(defaults::MAX_AMPLIFICATION);
        if !(max.is_finite() && max >= 1.0) {
            self.error(
                s.id.referenced,
                "`max_amplification` must be a number of at least 1",
            );
        }
        if s.operations == Some(0) {
            self.error(s.id.referenced, "`operations` must be at least 1");
        }
        let judge = Judge::Amplification {
            operations: s.operations.map(|n| n.max(1) as usize),
            max,
        };
        self.client_plan(cmd, one("steady-load", script), judge)
    }

    pub fn client_replay_is_success(&mut self, s: &ReplayIsSuccessSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        let header = s
            .replay_header
            .clone()
            .unwrap_or_else(|| defaults::REPLAY_HEADER.into());
        let value = s
            .replay_value
            .clone()
            .unwrap_or_else(|| defaults::REPLAY_VALUE.into());
        if axum::http::HeaderName::try_from(header.as_str()).is_err()
            || axum::http::HeaderValue::try_from(value.as_str()).is_err()
        {
            self.error(
                s.id.referenced,
                format!(
                    "`replay_header: {header}` / `replay_value: {value}` is not a valid header"
                ),
            );
        }
        let first = match self.keyword_or(s.first.as_ref(), "first", defaults::FIRST) {
            FirstAttemptSpec::Close => Step::fault(Action::Close),
            FirstAttemptSpec::Status503 => Step::reply(Reply::status(503).retry_after(
                dur(&s.retry_after, defaults::RETRY_AFTER),
                RetryAfterForm::Seconds,
            )),
        };
        // The retry finds the operation done: the stored 201, marked as a replay.
        let replay = Step::reply(Reply {
            headers: vec![(header.clone(), value.clone())],
            ..match created().action {
                Action::Reply(r) => r,
                _ => Reply::status(201),
            }
        });
        // Later operations (and a client that sends the operation again) get a fresh 201.
        let default = route(vec![first, replay], created());
        let script = self.script(&s.upstream, &s.r#match, default);
        let operations = s.operations.unwrap_or(defaults::OPERATIONS).max(1) as usize;
        let mut p = self.client_plan(
            cmd,
            one("replayed", script),
            Judge::Replay {
                header,
                value,
                operations,
            },
        );
        // Two attempts per operation, and a few more show the defect.
        p.stop_after_attempts = Some(2 * operations + 3);
        p
    }
}

/// Plans a check of the client family.
pub fn plan(ctx: &mut PlanCtx<'_>, spec: &ClientSpec) -> ClientPlan {
    use ClientSpec as C;
    match spec {
        C::RespectsRetryAfter(s) => ctx.client_respects_retry_after(s),
        C::ExponentialBackoff(s) => ctx.client_exponential_backoff(s),
        C::Jitter(s) => ctx.client_jitter(s),
        C::Bounded(s) => ctx.client_bounded(s),
        C::NoRetryOn4xx(s) => ctx.client_no_retry_on_4xx(s),
        C::Retry503Policy(s) => ctx.client_retry_503_policy(s),
        C::IdempotencyKeys(s) => ctx.client_idempotency_keys(s),
        C::SlowsBeforeLimit(s) => ctx.client_slows_before_limit(s),
        C::RetryAmplification(s) => ctx.client_retry_amplification(s),
        C::ReplayIsSuccess(s) => ctx.client_replay_is_success(s),
        C::Traceparent(s) => ctx.client_traceparent(s),
        C::Polling(s) => ctx.client_polling(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{build_with_env, CheckPlan, PlanOptions};
    use crate::suite::{Diagnostics, SuiteSource};

    const CLIENT: &str = "    client: { argv: [client] }\n";

    fn build(checks: &str) -> Result<Vec<ClientPlan>, Diagnostics> {
        let src = format!("suite: s\nchecks:\n{checks}");
        let path = std::path::Path::new("s.yaml");
        let file = crate::suite::read::parse_str(path, &src).expect("parses");
        let loaded = vec![SuiteSource {
            path: path.into(),
            source: src.clone(),
            file,
        }];
        let plan = build_with_env(&loaded, &PlanOptions::default(), &|_| None)?;
        Ok(plan
            .suites
            .into_iter()
            .flat_map(|s| s.checks)
            .map(|c| match c.body {
                CheckPlan::Client(p) => *p,
                other => panic!("not a client plan: {other:?}"),
            })
            .collect())
    }

    #[test]
    fn words_are_typed_and_read_leniently() {
        let plans = build(&format!(
            "  - id: a\n    kind: client.respects_retry_after\n{CLIENT}    form: HTTP_Date\n\
             \x20 - id: b\n    kind: client.retry_503_policy\n{CLIENT}    policy: Always\n\
             \x20 - id: c\n    kind: client.idempotency_keys\n{CLIENT}    key_format: ulid\n\
             \x20 - id: d\n    kind: client.replay_is_success\n{CLIENT}    first: 503\n\
             \x20 - id: e\n    kind: client.bounded\n{CLIENT}    max_total: 5s\n    upstream:\n      routes:\n        - path: /x\n          responses: [{{ fault: hang }}, {{ status: 429, retry_after: 1s, retry_after_form: http-date }}]\n"
        ))
        .unwrap_or_else(|d| panic!("{d}"));
        let first_step = |p: &ClientPlan, i: usize| p.runs[0].script.routes[0].steps[i].clone();
        match &first_step(&plans[0], 0).action {
            Action::Reply(r) => {
                assert!(matches!(r.retry_after, Some((_, RetryAfterForm::HttpDate))))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            plans[1].judge,
            Judge::Retry503 {
                policy: Policy503::Always,
                ..
            }
        ));
        assert!(matches!(
            plans[2].judge,
            Judge::IdempotencyKeys {
                format: KeyFormat::Ulid,
                ..
            }
        ));
        match &first_step(&plans[3], 0).action {
            Action::Reply(r) => assert_eq!(r.status, 503),
            other => panic!("{other:?}"),
        }
        assert!(matches!(first_step(&plans[4], 0).action, Action::Hang));
        match &first_step(&plans[4], 1).action {
            Action::Reply(r) => {
                assert!(matches!(r.retry_after, Some((_, RetryAfterForm::HttpDate))))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_when_absent() {
        let plans = build(&format!(
            "  - id: b\n    kind: client.retry_503_policy\n{CLIENT}\
             \x20 - id: c\n    kind: client.idempotency_keys\n{CLIENT}\
             \x20 - id: d\n    kind: client.replay_is_success\n{CLIENT}"
        ))
        .unwrap_or_else(|d| panic!("{d}"));
        assert!(matches!(
            plans[0].judge,
            Judge::Retry503 {
                policy: Policy503::RetryAfterOnly,
                ..
            }
        ));
        assert!(matches!(
            plans[1].judge,
            Judge::IdempotencyKeys {
                // `standard` (no profile): the key format is BOTIX's contract.
                format: KeyFormat::Any,
                ..
            }
        ));
        assert!(matches!(
            plans[2].runs[0].script.routes[0].steps[0].action,
            Action::Close
        ));
    }

    #[test]
    fn unknown_words_are_all_reported_at_their_positions() {
        let d = build(&format!(
            "  - id: a\n    kind: client.respects_retry_after\n{CLIENT}    form: rfc850\n\
             \x20 - id: b\n    kind: client.retry_503_policy\n{CLIENT}    policy: sometimes\n\
             \x20 - id: c\n    kind: client.idempotency_keys\n{CLIENT}    key_format: uuid\n\
             \x20 - id: d\n    kind: client.replay_is_success\n{CLIENT}    first: 500\n\
             \x20 - id: e\n    kind: client.bounded\n{CLIENT}    max_total: 5s\n    upstream:\n      routes:\n        - path: /x\n          responses: [{{ fault: explode }}]\n"
        ))
        .unwrap_err();
        let got: Vec<(u64, &str)> = d.0.iter().map(|d| (d.line, d.message.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (6, "unknown form `rfc850`: use one of `seconds`, `http-date`"),
                (10, "unknown policy `sometimes`: use one of `retry-after-only`, `always`, `never`"),
                (14, "unknown key_format `uuid`: use one of `uuidv4-or-ulid`, `uuidv4`, `ulid`, `any` (did you mean `ulid`?)"),
                (18, "unknown first `500`: use one of `close`, `503` (did you mean `503`?)"),
                (26, "unknown fault `explode`: use one of `close`, `hang`"),
            ],
            "{d}"
        );
    }

    #[test]
    fn default_scenarios_take_any_mutating_request_unless_matched() {
        let plans = build(&format!(
            "  - id: a\n    kind: client.respects_retry_after\n{CLIENT}\
             \x20 - id: b\n    kind: client.no_retry_on_4xx\n{CLIENT}    match: {{ method: put, path: /v1/customers }}\n\
             \x20 - id: c\n    kind: client.slows_before_limit\n{CLIENT}    match: {{ path: /v1/x }}\n"
        ))
        .unwrap_or_else(|d| panic!("{d}"));
        let r = &plans[0].runs[0].script.routes[0];
        assert!(r.matches("POST", "/v1/customers") && r.matches("PATCH", "/anything"));
        for run in &plans[1].runs {
            let r = &run.script.routes[0];
            assert!(r.matches("PUT", "/v1/customers") && !r.matches("POST", "/v1/customers"));
        }
        let r = &plans[2].runs[0].script.routes[0];
        assert!(r.matches("POST", "/v1/x") && !r.matches("POST", "/v1/y"));
        assert!(r.rate_limit.is_some());
    }

    #[test]
    fn every_kind_takes_upstream_and_match_excludes_it() {
        let up =
            "    upstream: { routes: [{ path: /v1/customers, responses: [{ status: 503 }] }] }\n";
        let plans = build(&format!(
            "  - id: a\n    kind: client.no_retry_on_4xx\n{CLIENT}{up}\
             \x20 - id: b\n    kind: client.retry_503_policy\n{CLIENT}{up}"
        ))
        .unwrap_or_else(|d| panic!("{d}"));
        for p in &plans {
            assert_eq!(p.runs.len(), 1, "the script is the one scenario");
            assert!(p.runs[0].script.routes[0].matches("POST", "/v1/customers"));
            assert_eq!(p.stop_after_attempts, None);
        }
        let d = build(&format!(
            "  - id: a\n    kind: client.bounded\n{CLIENT}    max_total: 1s\n    match: {{ path: /x }}\n{up}\
             \x20 - id: b\n    kind: client.jitter\n{CLIENT}    match: {{ method: \"NOT A METHOD\", path: x }}\n"
        ))
        .unwrap_err();
        let got: Vec<(u64, &str)> = d.0.iter().map(|d| (d.line, d.message.as_str())).collect();
        assert_eq!(got.len(), 3, "{d}");
        assert_eq!(got[0].0, 7);
        assert!(got[0].1.contains("with `upstream:` give each route"), "{d}");
        assert!(
            got[1].1.contains("not an HTTP method") && got[2].1.contains("must start with `/`"),
            "{d}"
        );
    }
}
