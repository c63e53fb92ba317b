//! The runner: executes a plan check by check and emits events. It knows the
//! plan and the checks, never the reporters.

use std::time::{Instant, SystemTime};

use tokio::sync::mpsc;

use crate::context::CheckContext;
use crate::events::{CheckResult, Event, SuiteInfo, Summary};
use crate::families::{self, load, Outcome};
use crate::http::{Client, Target};
use crate::plan::Plan;

pub mod order;
mod unserved;
use unserved::Unserved;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Stop at the first failed or errored check; the rest are reported skipped.
    pub fail_fast: bool,
    /// Base URL for suites without a target (the embedded reference).
    pub default_base_url: Option<String>,
    /// Base URL of the embedded reference's listener that requires client
    /// certificates, for suites without a target that ask for it
    /// (`target.embedded: client_certs`).
    pub client_cert_base_url: Option<String>,
    /// Base URL of the embedded reference's production twin (its own API
    /// keys), for `auth.sandbox_isolated` checks without a production URL.
    pub production_twin: Option<String>,
    /// Folder for load figures (`.hgrm`, `.hlog`, JSON); empty: `reports`.
    pub report_dir: std::path::PathBuf,
    /// `--allow-remote-load`: load may go to a non-loopback target.
    pub allow_remote_load: bool,
    /// `--strict`: a broken SHOULD property fails the check (exit 1).
    pub strict: bool,
    /// `--quota`, `--max-quota-wait`: the request budget's options.
    pub quota: crate::http::quota::QuotaOptions,
    /// `--upstream-max-body`: the mock upstream's body limit.
    pub upstream_max_body: usize,
    /// `--upstream-cert`/`--upstream-key`: the mock upstream serves https.
    pub upstream_tls: Option<crate::http::tls_server::ServerTls>,
    /// `--dependency-listen`/`--dependency-url`: the dependency double's address.
    pub dependency: crate::double::DependencyEndpoint,
    /// What every report must say about the whole run (`--insecure`).
    pub warnings: Vec<String>,
}

/// Something that consumes the runner's events (a set of reporters, a
/// test's Vec, ...). Not to be confused with a webhook sink.
pub trait EventListener {
    fn event(&mut self, e: &Event);
}

impl<F: FnMut(&Event)> EventListener for F {
    fn event(&mut self, e: &Event) {
        self(e)
    }
}

pub fn suite_infos(plan: &Plan, opts: &RunOptions) -> Vec<SuiteInfo> {
    plan.suites
        .iter()
        .map(|s| SuiteInfo {
            name: s.name.clone(),
            file: s.file.clone(),
            digest: Some(s.digest.clone()),
            version: s.version.clone(),
            target: s
                .base_url
                .clone()
                .or_else(|| {
                    if s.on_client_cert_listener() {
                        opts.client_cert_base_url.clone()
                    } else {
                        opts.default_base_url.clone()
                    }
                })
                .unwrap_or_default(),
            checks: s.checks.len() + s.load.as_ref().map_or(0, load::exec::result_count),
            profile: s.profile.as_str(),
        })
        .collect()
}

/// Runs every check of the plan, each suite's in the order of their needs
/// (`order`: checks that exhaust the limit after the served ones, and those
/// that count every other's answers last). `cancel` resolving stops the run
/// between checks (and interrupts the current one); what did not run is
/// reported skipped.
pub async fn run(
    plan: &Plan,
    opts: &RunOptions,
    client: &Client,
    events: &mut dyn EventListener,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Summary {
    let started = Instant::now();
    let infos = suite_infos(plan, opts);
    events.event(&Event::RunStarted {
        started_at: SystemTime::now(),
        suites: infos.clone(),
        warnings: opts.warnings.clone(),
    });
    let mut summary = Summary::default();
    let mut stop: Option<String> = None;
    // One day for the whole run, so a run across midnight judges every
    // waiver alike.
    let today = crate::waiver::Date::today();
    // The ids every fresh answer carried, for the uniqueness checks to
    // count beside their own samples (`context::seen`).
    let seen = crate::context::seen::Seen::new(
        plan.suites
            .iter()
            .flat_map(|s| s.checks.iter())
            .filter_map(|c| c.body.pooled_id_header()),
    );
    for (suite, info) in plan.suites.iter().zip(infos) {
        let suite_started = Instant::now();
        events.event(&Event::SuiteStarted(info.clone()));
        // `target.auth`: the OAuth2 clients' first tokens are fetched now,
        // so a failing token endpoint is every check's error, said once.
        // (Not for a suite `--only`/`--tag` left nothing of.)
        let runs_something = !suite.checks.is_empty() || suite.load.is_some();
        let (auth, auth_error) =
            token_sources(suite, &info.target, plan, stop.is_none() && runs_something).await;
        let target = Target {
            base_url: info.target.clone(),
            headers: suite.headers.clone(),
            second_tenant_headers: suite.second_tenant_headers.clone(),
            timeout: suite.timeout,
            label: crate::http::SUITE_CREDENTIAL.to_owned(),
            auth: auth.0,
            second_tenant_auth: auth.1,
        };
        let credentials = Credentials::of(&target);
        // `contract:`: every response the checks' client receives is judged.
        let watch = suite
            .contract
            .as_ref()
            .map(|c| std::sync::Arc::new(crate::contract::Watch::new(c.clone())));
        // The burst's client is watched by the contract only; the checks'
        // also by the rule that stops a suite its target does not serve.
        let load_client = match &watch {
            Some(w) => client.observed(w.clone()),
            None => client.clone(),
        };
        let mut watchers: Vec<std::sync::Arc<dyn crate::http::Observer>> =
            vec![std::sync::Arc::new(seen.clone())];
        if let Some(w) = &watch {
            watchers.push(w.clone());
        }
        let unserved = std::sync::Arc::new(Unserved::new(Some(std::sync::Arc::new(
            crate::context::seen::Tee(watchers),
        ))));
        let check_client = client.observed(unserved.clone());
        let mut suite_stop: Option<String> = None;
        if let Some(q) = client.quota() {
            q.declare(&credentials.own, suite.rate_limit);
            if let Some(c) = &credentials.second {
                q.declare(c, suite.rate_limit);
            }
        }
        // One exhaustion of the limit serves the checks that need it
        // reached: the runner orders the checks by their needs and hands
        // the block from one to the next (`order`, `context::block`).
        let exhaustion = crate::context::block::Exhaustion::new();
        let needs: Vec<_> = suite
            .checks
            .iter()
            .map(|c| c.body.requests().need)
            .collect();
        // Answers the limiter counted for the checks that need served
        // answers: the requests the suite's inherent bound counts.
        let mut served = 0u64;
        let mut queue: std::collections::VecDeque<_> = order::order(&needs).into();
        let would_wait = |i: usize| {
            let n = suite.checks[i].body.requests().window;
            n > 0
                && client
                    .quota()
                    .is_some_and(|q| q.would_wait(&credentials.own, n))
        };
        while let Some(slot) = order::next(&mut queue, &needs, would_wait) {
            let check = &suite.checks[slot.index];
            if stop.is_none() && *cancel.borrow() {
                stop = Some("not run: the run was cancelled".into());
            }
            let check_started = Instant::now();
            let started_at = SystemTime::now();
            let spent_before = credentials.spent(client);
            // A token due now is fetched before the check, so requests a
            // family sends on its own connections carry a fresh one too.
            let token_error = match (&stop, &auth_error) {
                (Some(_), _) => None,
                (None, Some(e)) => Some(e.clone()),
                (None, None) => target.fresh_tokens().await.err(),
            };
            let why_not = stop.clone().or_else(|| suite_stop.clone());
            let mut outcome = if let Some(why) = &why_not {
                Outcome::skipped(why.clone())
            } else if let Some(e) = token_error {
                Outcome::error(e)
            } else {
                events.event(&Event::CheckStarted {
                    suite: suite.name.clone(),
                    id: check.id.clone(),
                });
                let (tx, mut rx) = mpsc::unbounded_channel();
                if let Some(q) = client.quota() {
                    q.set_notes(Some(tx.clone()));
                }
                let ctx = CheckContext {
                    client: check_client.clone(),
                    target: target.clone(),
                    notes: tx,
                    redactor: plan.redactor.clone(),
                    allow_remote_load: opts.allow_remote_load,
                    sink: suite.sink.clone(),
                    upstream_max_body: opts.upstream_max_body,
                    upstream_tls: opts.upstream_tls.clone(),
                    dependency: opts.dependency.clone(),
                    exhaustion: exhaustion.for_check(&check.id, slot.hand_on),
                    // Only a suite run against the embedded reference has
                    // its production twin.
                    production_twin: opts
                        .production_twin
                        .clone()
                        .filter(|_| suite.base_url.is_none()),
                    seen: seen.clone(),
                };
                // The check's requests are reserved by its first request to
                // a limited path, so it is not cut across a window's reset by
                // accident (and paths outside the limiter never wait).
                credentials.expect(client, check.body.requests());
                let mut fut = std::pin::pin!(families::execute(&check.body, &ctx));
                let mut cancel = cancel.clone();
                loop {
                    tokio::select! {
                        o = &mut fut => break o,
                        Some(note) = rx.recv() => events.event(&Event::CheckNote {
                            suite: suite.name.clone(),
                            id: check.id.clone(),
                            message: note,
                        }),
                        Ok(()) = cancel.changed() => {
                            if *cancel.borrow() {
                                stop = Some("not run: the run was cancelled".into());
                                break Outcome::error("cancelled while running");
                            }
                        }
                        () = unserved.decided() => {
                            break Outcome::error(unserved.verdict().unwrap_or_default());
                        }
                    }
                }
            };
            if why_not.is_none() {
                unserved.check_finished();
            }
            if !slot.hand_on {
                // The block was used up (or cooled down): nothing to hand on.
                exhaustion.clear();
            }
            if let (None, None, Some(v)) = (&suite_stop, &why_not, unserved.verdict()) {
                // Decided during this check: its own verdict rests on the
                // same 404s, so the cause is what it reports.
                outcome = Outcome::error(v);
                suite_stop = Some(format!(
                    "not run: the target does not serve this suite's routes (see {})",
                    check.id
                ));
            }
            if let Some(q) = client.quota() {
                q.set_notes(None);
                q.clear_expected();
            }
            credentials.account(client, &mut outcome, &spent_before, check.body.requests());
            if check.body.requests().need.served() {
                served += credentials.spent(client).counted - spent_before.counted;
            }
            // The contract property is the runner's, not the kind's: its
            // level is that of the worst rule the check's responses broke.
            let contract = watch.as_ref().and_then(|w| w.finish_check());
            let contract_severity = contract.as_ref().map(|(_, s)| *s);
            if let Some((a, _)) = contract.filter(|_| outcome.verdict != families::Verdict::Skipped)
            {
                let own = check.severities.first().map_or(check.kind, |(p, _)| *p);
                outcome.add_assertion(own, a);
            }
            // Levels are the plan's business, not the family's: the family
            // says what held, the table and the check say how much it matters.
            outcome.apply_severity(
                |p| match contract_severity {
                    Some(s) if p == crate::contract::PROPERTY => s,
                    _ => check.severity_of(p),
                },
                check.single_severity(),
                opts.strict || suite.strict,
            );
            let single = match check.severities.as_slice() {
                [(p, _)] => Some(*p),
                _ => None,
            };
            outcome.apply_waivers(&check.waivers, single, today);
            let finished = CheckResult {
                suite: suite.name.clone(),
                id: check.id.clone(),
                kind: check.kind,
                tags: check.tags.clone(),
                description: check.description.clone(),
                requirements: check.requirements,
                outcome,
                started_at,
                duration: check_started.elapsed(),
            };
            record(&mut summary, &mut stop, opts, events, finished);
            if let (Some(pause), None) = (check.after, &stop) {
                events.event(&Event::CheckNote {
                    suite: suite.name.clone(),
                    id: check.id.clone(),
                    message: format!(
                        "after: waiting {} before the next check",
                        crate::fmt_duration(pause)
                    ),
                });
                let mut cancel = cancel.clone();
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    Ok(()) = cancel.changed() => {}
                }
            }
        }
        if stop.is_none() {
            if let Some(note) = bound_note(client, &credentials, suite, (suite_started, served)) {
                events.event(&Event::Notice(note));
            }
        }
        // The burst rehearsal runs after the suite's checks; each threshold
        // comes back as its own result.
        if let Some(load) = &suite.load {
            if stop.is_none() && *cancel.borrow() {
                stop = Some("not run: the run was cancelled".into());
            }
            let load_started = Instant::now();
            let started_at = SystemTime::now();
            let load_stop = stop.clone().or_else(|| suite_stop.clone());
            let token_error = match (&load_stop, &auth_error) {
                (Some(_), _) => None,
                (None, Some(e)) => Some(e.clone()),
                (None, None) => target.fresh_tokens().await.err(),
            };
            let results = match (&load_stop, token_error) {
                (Some(why), _) => load::exec::uniform(load, Outcome::skipped(why.clone())),
                (None, Some(e)) => load::exec::uniform(load, Outcome::error(e)),
                (None, None) => {
                    events.event(&Event::CheckStarted {
                        suite: suite.name.clone(),
                        id: load.id.clone(),
                    });
                    let ctx = load::exec::LoadContext {
                        suite: &suite.name,
                        target: &target,
                        // The contract sees a sample of the burst's responses.
                        client: &load_client,
                        redactor: plan.redactor.clone(),
                        report_dir: &opts.report_dir,
                        allow_remote: opts.allow_remote_load,
                        cancel: cancel.clone(),
                        sink: suite.sink.clone(),
                    };
                    load::exec::run(load, ctx).await
                }
            };
            let duration = load_started.elapsed();
            // The burst's contract sample is judged on its delivered result:
            // the responses it saw, not a threshold of their latencies.
            let mut contract = watch.as_ref().and_then(|w| w.finish_check());
            let strict = opts.strict || suite.strict;
            for mut r in results {
                if r.kind == "load.delivery" && r.outcome.verdict != families::Verdict::Skipped {
                    if let Some((mut a, severity)) = contract.take() {
                        a.severity = severity;
                        if severity == crate::outcome::Severity::Should
                            && !strict
                            && a.verdict == families::Verdict::Fail
                        {
                            a.verdict = families::Verdict::Warn;
                        }
                        r.outcome.add_assertion(r.kind, a);
                    }
                }
                if let Some(figures) = r.figures.take() {
                    events.event(&Event::LoadFigures(figures));
                }
                let finished = CheckResult {
                    suite: suite.name.clone(),
                    id: r.id,
                    kind: r.kind,
                    tags: load.tags.clone(),
                    description: Some(r.description),
                    requirements: crate::coverage::of_kind(r.kind),
                    outcome: r.outcome,
                    started_at,
                    duration,
                };
                record(&mut summary, &mut stop, opts, events, finished);
            }
        }
        if let Some(w) = &watch {
            events.event(&Event::ContractSummary(Box::new(w.summary(&suite.name))));
        }
        events.event(&Event::SuiteFinished {
            suite: suite.name.clone(),
            duration: suite_started.elapsed(),
        });
    }
    let cancelled = *cancel.borrow();
    events.event(&Event::RunFinished {
        summary,
        duration: started.elapsed(),
        cancelled,
    });
    summary
}

/// The suite's OAuth2 token sources (its own, the second tenant's), each
/// with its first token fetched when `fetch`; the error, if any, names the
/// token endpoint and what went wrong.
async fn token_sources(
    suite: &crate::plan::PlannedSuite,
    base_url: &str,
    plan: &Plan,
    fetch: bool,
) -> (TokenSources, Option<String>) {
    use crate::http::oauth::TokenSource;
    let mut error = None;
    let mut make = |c: &Option<crate::http::oauth::ClientCredentials>| {
        let mut c = c.clone()?;
        if c.token_url.starts_with('/') {
            // A path on the target: the secret goes to the target's origin,
            // which must then be https or loopback like any token URL.
            let joined = format!("{base_url}{}", c.token_url);
            if joined.starts_with("http://") && !crate::context::is_loopback(&joined) {
                error.get_or_insert(format!(
                    "oauth2 token_url `{}` on {} is plain http to another host: the client secret travels to it, so it must be https (RFC 6749 §2.3.1); http is allowed to a loopback address only",
                    c.token_url,
                    crate::redact::mask_userinfo(base_url)
                ));
                return None;
            }
            // Not the target's userinfo: the client authenticates itself.
            c.token_url = match reqwest::Url::parse(&joined) {
                Ok(mut u) => {
                    let _ = u.set_username("");
                    let _ = u.set_password(None);
                    u.to_string()
                }
                Err(_) => joined,
            };
        }
        match TokenSource::new(c, plan.redactor.clone(), suite.timeout) {
            Ok(s) => Some(std::sync::Arc::new(s)),
            Err(e) => {
                error.get_or_insert(e);
                None
            }
        }
    };
    let sources = (make(&suite.auth), make(&suite.second_tenant_auth));
    if fetch && error.is_none() {
        for s in [&sources.0, &sources.1].into_iter().flatten() {
            if let Err(e) = s.token().await {
                error = Some(e);
                break;
            }
        }
    }
    (sources, error)
}

type TokenSources = (
    Option<std::sync::Arc<crate::http::oauth::TokenSource>>,
    Option<std::sync::Arc<crate::http::oauth::TokenSource>>,
);

/// The credentials of a suite's target, as the request budget knows them.
struct Credentials {
    own: crate::http::Credential,
    second: Option<crate::http::Credential>,
}

/// What the book had counted for a suite's credentials when a check began.
struct Spent {
    waited: std::time::Duration,
    own: u64,
    second: u64,
    /// The suite credential's answers the limiter counted.
    counted: u64,
}

impl Credentials {
    fn of(target: &Target) -> Self {
        Credentials {
            own: target.credential(),
            second: target.as_second_tenant().map(|t| t.credential()),
        }
    }

    fn expect(&self, client: &Client, needs: crate::context::budget::Requests) {
        let Some(q) = client.quota() else {
            return;
        };
        q.expect(&self.own, needs.window);
        if let Some(c) = &self.second {
            q.expect(c, needs.second);
        }
    }

    fn spent(&self, client: &Client) -> Spent {
        let Some(q) = client.quota() else {
            return Spent {
                waited: std::time::Duration::ZERO,
                own: 0,
                second: 0,
                counted: 0,
            };
        };
        Spent {
            waited: q.waited(),
            own: q.sent(&self.own),
            second: self.second.as_ref().map_or(0, |c| q.sent(c)),
            counted: q.counted(&self.own),
        }
    }

    /// Puts what the check spent on its outcome: the time it waited for
    /// quota (`quota_wait_s`, only when it waited), the requests each
    /// credential sent (`requests_own`, `requests_second`) and what the plan
    /// reserved (`requests_budget`; absent for the checks sized from the
    /// advertised limit).
    fn account(
        &self,
        client: &Client,
        outcome: &mut Outcome,
        before: &Spent,
        budget: crate::context::budget::Requests,
    ) {
        if client.quota().is_none() || outcome.verdict == families::Verdict::Skipped {
            return;
        }
        let now = self.spent(client);
        let waited = now.waited.saturating_sub(before.waited);
        if !waited.is_zero() {
            outcome.properties.push(crate::outcome::prop(
                "quota_wait_s",
                crate::outcome::PropValue::rounded(waited.as_secs_f64(), 3),
            ));
        }
        outcome.properties.push(crate::outcome::prop(
            "requests_own",
            now.own.saturating_sub(before.own) as i64,
        ));
        if budget.own > 0 {
            outcome
                .properties
                .push(crate::outcome::prop("requests_budget", budget.own as i64));
        }
        if self.second.is_some() {
            outcome.properties.push(crate::outcome::prop(
                "requests_second",
                now.second.saturating_sub(before.second) as i64,
            ));
        }
    }
}

/// The suite's wall time against its inherent bound under the quota the
/// book knows for its credential (`cost::Inherent`, from the `served`
/// answers the limiter counted for the checks that need served answers,
/// and the exhaustion; the first wait is what was left of the window the
/// suite began in, when the target said).
/// `None` without a quota, or when nothing needed one.
fn bound_note(
    client: &Client,
    credentials: &Credentials,
    suite: &crate::plan::PlannedSuite,
    (started, served): (Instant, u64),
) -> Option<String> {
    let book = client.quota()?;
    let q = book.quota_of(&credentials.own)?;
    let took = started.elapsed();
    let i = crate::cost::Inherent::of(served, Vec::new(), crate::cost::exhausts(suite), q);
    let first = book
        .first_reset_of(&credentials.own)
        .and_then(|r| r.checked_duration_since(started));
    let bound = i.least(q, first);
    if bound.is_zero() {
        // No window to wait for: the suite's time is its own (a webhook
        // ladder, a burst), and a ratio against zero would say nothing.
        return Some(format!(
            "quota: {}'s checks took {}; at {q} the quota sets no inherent bound on them ({} request(s) the limiter counted, no window reset to wait for)",
            suite.name,
            crate::http::quota::fmt_wait(took),
            i.requests,
        ));
    }
    let ratio = format!(" ({:.2}×)", took.as_secs_f64() / bound.as_secs_f64());
    Some(format!(
        "quota: {}'s checks took {} against an inherent bound of {}{ratio} at {q}: {} request(s) the limiter counted for the checks that needed served answers{}, {} window reset{} to wait for{}",
        suite.name,
        crate::http::quota::fmt_wait(took),
        crate::http::quota::fmt_wait(bound),
        i.requests,
        if i.exhausts { " and one exhaustion" } else { "" },
        i.waits,
        if i.waits == 1 { "" } else { "s" },
        match first {
            Some(f) if i.waits > 0 => format!(
                ", the first {} away when the suite began",
                crate::http::quota::fmt_wait(f.min(q.window))
            ),
            _ => String::new(),
        }
    ))
}

/// Counts a finished result, applies `--fail-fast` and reports it: the one
/// place results of checks and of loads are added to the run's `Summary`.
fn record(
    summary: &mut Summary,
    stop: &mut Option<String>,
    opts: &RunOptions,
    events: &mut dyn EventListener,
    r: CheckResult,
) {
    let verdict = r.outcome.verdict;
    summary.add_outcome(&r.outcome);
    if opts.fail_fast
        && stop.is_none()
        && matches!(verdict, families::Verdict::Fail | families::Verdict::Error)
    {
        *stop = Some(format!(
            "not run: --fail-fast stopped after {}/{}",
            r.suite, r.id
        ));
    }
    events.event(&Event::CheckFinished(Box::new(r)));
}
