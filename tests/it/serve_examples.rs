//! Issue 27, the canary-gate examples: the serve Deployment, the Flagger
//! Canary and the Argo AnalysisTemplate parse, call only the routes `tminus
//! serve` answers (the hooks it knows, the Argo metric with a target), carry
//! the token the way each controller can (Flagger: `metadata.token`; Argo:
//! an Authorization header from a Secret), and use only flags that
//! `tminus serve --help` lists.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{repo, stdout, tminus};
use serde_json::Value;

fn documents(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo().join(path)).unwrap();
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_flagger_canary_calls_the_hooks_serve_answers() {
    let docs = documents("examples/k8s/flagger-canary.yaml");
    let canary = docs
        .iter()
        .find(|d| d["kind"] == "Canary")
        .expect("a Canary");
    assert_eq!(
        canary["spec"]["analysis"]["stepWeights"],
        serde_json::json!([5, 25, 50])
    );
    let hooks = canary["spec"]["analysis"]["webhooks"].as_array().unwrap();
    let mut types = BTreeSet::new();
    for h in hooks {
        let ty = h["type"].as_str().unwrap();
        types.insert(ty.to_owned());
        let url = h["url"].as_str().unwrap();
        assert!(
            url.ends_with(&format!("/flagger/{ty}")),
            "{url} is not serve's route for {ty}"
        );
        assert!(
            h["metadata"]["token"].is_string(),
            "{h}: Flagger sends no headers; the token is metadata"
        );
        if ty != "confirm-promotion" {
            assert!(h["metadata"]["target"].is_string(), "{h}: no target");
            for s in h["metadata"]["suites"].as_str().unwrap().split(',') {
                assert!(
                    repo().join("suites").join(s).is_file(),
                    "suite {s} is not shipped"
                );
            }
        }
    }
    assert_eq!(
        types,
        ["confirm-promotion", "pre-rollout", "rollout"]
            .map(String::from)
            .into(),
    );
}

#[test]
fn the_argo_template_reads_the_web_metric_with_a_bearer_token() {
    let docs = documents("examples/k8s/argo-analysis-template.yaml");
    let t = docs
        .iter()
        .find(|d| d["kind"] == "AnalysisTemplate")
        .expect("a template");
    let m = &t["spec"]["metrics"][0];
    let web = &m["provider"]["web"];
    let url = web["url"].as_str().unwrap();
    assert!(
        url.contains("/argo/{{args.namespace}}/{{args.rollout}}?target="),
        "{url}"
    );
    assert_eq!(web["jsonPath"], "{$.verdict}");
    assert_eq!(m["successCondition"], "result == \"pass\"");
    assert_eq!(web["headers"][0]["key"], "Authorization");
    assert!(web["headers"][0]["value"]
        .as_str()
        .unwrap()
        .starts_with("Bearer {{args.token}}"));
    let token = t["spec"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "token")
        .unwrap();
    assert!(
        token["valueFrom"]["secretKeyRef"].is_object(),
        "the token comes from a Secret"
    );
}

#[test]
fn the_serve_deployment_uses_only_flags_serve_lists() {
    let dir = tempfile::tempdir().unwrap();
    let out = tminus(
        dir.path(),
        &["serve", "--help"],
        &[],
        Duration::from_secs(20),
    );
    let help = stdout(&out);
    let docs = documents("examples/k8s/serve.yaml");
    let deploy = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let c = &deploy["spec"]["template"]["spec"]["containers"][0];
    let args = c["args"].as_array().unwrap();
    assert_eq!(args[0], "serve");
    for a in &args[1..] {
        let flag = a.as_str().unwrap().split('=').next().unwrap();
        assert!(
            help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
            "{flag} is not a serve flag"
        );
    }
    let env = c["env"].as_array().unwrap();
    assert!(env
        .iter()
        .any(|e| e["name"] == "TMINUS_SERVE_TOKEN" && e["valueFrom"]["secretKeyRef"].is_object()));
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/healthz");
}
