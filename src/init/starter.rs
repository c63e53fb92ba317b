//! `tminus init`: a commented starter suite for one role and profile, with
//! every setting a real target needs named in one place (`vars:`, `target:`,
//! `defaults:`), that validates as written and, with no target given, runs
//! against the embedded reference.

use crate::model::profile::Profile;

/// Which side of an integration the suite certifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// An HTTP API: idempotency, rate limits, trace ids (tminus is the caller).
    Api,
    /// An API client or SDK: retries, backoff, keys (tminus is the platform).
    Client,
    /// A webhook receiver: signatures, replays, duplicates (tminus sends).
    Receiver,
    /// A webhook-sending platform: signed deliveries, retries (tminus receives).
    Platform,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Api => "api",
            Role::Client => "client",
            Role::Receiver => "receiver",
            Role::Platform => "platform",
        }
    }
}

const HEADER: &str = "\
# yaml-language-server: $schema=suite.schema.json
# (write the schema next to this file: `tminus schema suite > suite.schema.json`)
#
# A tminus starter suite: `tminus validate FILE`, then `tminus run FILE`.
# With no target (TMINUS_TARGET unset) tminus starts its embedded reference
# integration, so this suite runs as written; point it at your staging host
# with TMINUS_TARGET=https://staging.example.com and the secrets it names.
";

/// The starter suite's text.
pub fn starter(role: Role, profile: Profile) -> String {
    let mut s = String::from(HEADER);
    s.push_str(&format!(
        "suite: my-{role}\n\
         # `standard`: only what the RFCs, IETF drafts and Standard Webhooks require;\n\
         # `botix`: the seed checklist's contract (error codes, replay marker, 401 probes).\n\
         profile: {profile}\n\
         version: \"0.1\"\n\
         # strict: true   # treat broken SHOULD properties (warnings) as failures\n",
        role = role.as_str(),
        profile = profile.as_str()
    ));
    s.push_str(match role {
        Role::Api => API,
        Role::Client => CLIENT,
        Role::Receiver => RECEIVER,
        Role::Platform => PLATFORM,
    });
    s
}

const API: &str = r#"vars:
  # A counter of executions the checks read before and after: a real system
  # must offer one (a count endpoint, an admin query). The default is the
  # embedded reference's test hook.
  effects_path: /__tminus/effects/messages.create
  # A mutating route and a body it accepts.
  create_path: /public/v1/messages
target:
  base_url: ${env.TMINUS_TARGET:-}
  headers:
    # Secrets come from the environment and never appear in any report.
    Authorization: "Bearer ${secret.TMINUS_API_KEY:-ref_test_key_a}"
  # A second tenant, for the cross-tenant checks.
  second_tenant_headers:
    Authorization: "Bearer ${secret.TMINUS_API_KEY_B:-ref_test_key_b}"
  timeout: 5s

# The dialect, once per family; every check inherits it unless it says otherwise.
defaults:
  idempotency:
    key_header: Idempotency-Key
    effects: { request: { path: "${var.effects_path}" }, value: $.count }
    # The replay marker your API sends, if any (the draft defines none):
    # marker: { header: Idempotent-Replayed, values: ["true"], policy: required }
  rate_limit:
    request: { path: /public/v1/messages/count }

checks:
  - id: idem-replay
    kind: idempotency.replay
    description: the same request twice with one key executes once and replays
    request:
      method: POST
      path: ${var.create_path}
      json: { contact_id: 1, text: "replay ${uuid}" }

  - id: idem-mismatch
    kind: idempotency.mismatch
    description: the same key with another body is rejected, not executed
    request:
      method: POST
      path: ${var.create_path}
      json: { contact_id: 1, text: "mismatch ${uuid}" }
    # Statuses your API uses for a reused key with another body (the draft says 422).
    reject_status: [409, 422]

  - id: rl-headers
    kind: rate_limit.headers
    description: responses carry rate-limit headers that parse
    requests:
      - { path: /public/v1/messages/count }
    # Each sample is a request against your budget: keep it small.
    samples: 5
    # A cooldown so a small window refills before the next check.
    after: 1s

  - id: rl-storm
    kind: rate_limit.storm
    description: a bounded burst over the limit gets 429 with Retry-After, never 5xx
    max_requests: 200
    concurrency: 4

  - id: trace-present
    kind: trace.present
    description: every response carries a request/trace id
    request: { path: /public/v1/messages/count }
"#;

const CLIENT: &str = r#"# The client under test is any program: tminus serves a scripted upstream on
# 127.0.0.1 and hands it the URL (${upstream.url} in argv, or the environment
# variable TMINUS_UPSTREAM_URL). As written, `argv` runs tminus's own reference
# client: replace it with your client's command.
checks:
  - id: respects-retry-after
    kind: client.respects_retry_after
    description: 429 + Retry-After is waited out, every time
    client: { argv: ["${var.tminus_exe}", reference, client, --url, "${upstream.url}"], timeout: 20s }

  - id: no-retry-on-4xx
    kind: client.no_retry_on_4xx
    description: 400/401/403/404/422 are final
    client: { argv: ["${var.tminus_exe}", reference, client, --url, "${upstream.url}"], timeout: 10s }

  - id: idempotency-keys
    kind: client.idempotency_keys
    description: every mutating request carries a key, reused on every retry
    client: { argv: ["${var.tminus_exe}", reference, client, --url, "${upstream.url}"], timeout: 20s }
"#;

const RECEIVER: &str = r#"vars:
  # The receiver's signing secret (Standard Webhooks `whsec_...`).
  receiver_secret: "${secret.TMINUS_WEBHOOK_SECRET:-whsec_dG1pbnVzLXJlZmVyZW5jZS1yZWNlaXZlci1rZXk=}"
  # A count of processed deliveries (the reference's test hook by default).
  effects_path: /__tminus/effects/webhooks.processed
target:
  base_url: ${env.TMINUS_TARGET:-}
  timeout: 5s

defaults:
  webhook:
    # Your receiver's path on the target (or an absolute URL).
    receiver: /integrator/webhooks
    secret: "${var.receiver_secret}"
    effects: { request: { path: "${var.effects_path}" }, value: $.count }

checks:
  - id: wh-accepts-valid
    kind: webhook.accepts_valid
    description: a correctly signed delivery is acknowledged and processed once

  - id: wh-rejects-forged
    kind: webhook.rejects_forged
    description: a delivery signed with another secret is rejected, not processed

  - id: wh-rejects-stale
    kind: webhook.rejects_stale
    description: a delivery older than the tolerance is rejected

  - id: wh-dedupes-replay
    kind: webhook.dedupes_replay
    description: the same delivery twice is processed once
"#;

const PLATFORM: &str = r#"vars:
  # The secret the platform signs deliveries to tminus's sink with.
  sink_secret: "${secret.TMINUS_SINK_SECRET:-sink_test_secret_1}"
target:
  base_url: ${env.TMINUS_TARGET:-}
  headers:
    Authorization: "Bearer ${secret.TMINUS_API_KEY:-ref_test_key_a}"
  timeout: 5s
  # Where the sink listens and the URL the platform is given; a real
  # platform needs a reachable one (an ingress or tunnel), e.g.
  # sink: { listen: "0.0.0.0:8088", url: "https://hooks.example.com/tminus" }

checks:
  - id: webhook-delivery-signed
    kind: webhook.sink_delivery
    description: a triggered event arrives signed
    secret: "${var.sink_secret}"
    event: message.created
    # How to make your platform deliver to ${var.sink_url}: subscribe, then cause an event.
    trigger:
      - { method: POST, path: /public/v1/webhooks, json: { url: "${var.sink_url}", events: [message.created], secret: "${var.sink_secret}" } }
      - { method: POST, path: /public/v1/messages, headers: { Idempotency-Key: "${uuid}" }, json: { contact_id: 1, text: "webhook probe" } }
    wait: 5s
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_starter_names_its_profile_and_role() {
        for role in [Role::Api, Role::Client, Role::Receiver, Role::Platform] {
            for profile in Profile::ALL {
                let s = starter(role, profile);
                assert!(s.starts_with("# yaml-language-server: $schema="), "{s}");
                assert!(s.contains(&format!("profile: {profile}\n")), "{s}");
                assert!(s.contains(&format!("suite: my-{}\n", role.as_str())), "{s}");
            }
        }
    }
}
