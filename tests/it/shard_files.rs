//! Issue 15, the orchestrator examples for sharded bursts: the Kubernetes
//! Indexed Job (`examples/k8s/burst-indexed-job.yaml`) and the GitHub Actions
//! matrix (`.github/workflows/burst-shards.example.yml`) parse, have the
//! shape their engine needs (all shards at once, index mapped to a 1-based
//! `--shard`, a merge step after the shards) and use only flags that
//! `tminus run --help` and `tminus merge --help` list.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{repo, stderr, stdout, tminus};
use serde_json::Value;

const K8S: &str = "examples/k8s/burst-indexed-job.yaml";
const WORKFLOW: &str = ".github/workflows/burst-shards.example.yml";

fn text(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn documents(path: &str) -> Vec<Value> {
    serde_saphyr::from_multiple(&text(path))
        .unwrap_or_else(|e| panic!("{path} does not parse: {e}"))
}

/// The long flags `tminus SUBCOMMAND --help` lists.
fn help_flags(sub: &str) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let out = tminus(dir.path(), &[sub, "--help"], &[], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    flags(&stdout(&out))
}

fn flags(text: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"(?:^|[\s\[(])(--[a-z][a-z0-9-]*)").unwrap();
    re.captures_iter(text).map(|c| c[1].to_owned()).collect()
}

/// Every `tminus SUB ...` command line of a script (continuations joined),
/// from the command to the end of its line.
fn command_lines(script: &str, sub: &str) -> Vec<String> {
    let re = regex::Regex::new(&format!(r#"tminus"?\s+{sub}\b"#)).unwrap();
    script
        .replace("\\\n", " ")
        .lines()
        .filter_map(|l| re.find(l).map(|m| l[m.start()..].to_owned()))
        .collect()
}

/// The shard count in `--shard "<index>/N"`.
fn shard_count(line: &str) -> u64 {
    let re = regex::Regex::new(r#"--shard\s+"?[^"/]+/(\d+)"#).unwrap();
    re.captures(line)
        .unwrap_or_else(|| panic!("no --shard I/N in {line}"))[1]
        .parse()
        .unwrap()
}

/// Checks the flags of the `run` and `merge` lines against the real CLI.
fn assert_flags_exist(runs: &[String], merges: &[String]) {
    let known_run = help_flags("run");
    let known_merge = help_flags("merge");
    assert!(known_run.contains("--shard") && known_run.contains("--start-at"));
    assert!(known_merge.contains("--suite") && known_merge.contains("--report-dir"));
    for (lines, known, sub) in [(runs, &known_run, "run"), (merges, &known_merge, "merge")] {
        for l in lines {
            let unknown: Vec<String> = flags(l).difference(known).cloned().collect();
            assert!(
                unknown.is_empty(),
                "not in `tminus {sub} --help`: {unknown:?} in {l}"
            );
        }
    }
}

#[test]
fn the_kubernetes_example_is_an_indexed_job_of_shards_then_a_merge() {
    let docs = documents(K8S);
    let jobs: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Job").collect();
    assert_eq!(jobs.len(), 2, "a shard Job and a merge Job");
    let script = |j: &Value| -> String {
        let c = &j["spec"]["template"]["spec"]["containers"][0];
        let mut s: Vec<String> = c["command"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(c["args"].as_array().into_iter().flatten())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        s.push(String::new());
        s.join("\n")
    };
    let shards = jobs[0];
    let spec = &shards["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().expect("completions");
    assert_eq!(
        spec["parallelism"].as_u64(),
        Some(n),
        "every shard must run at once"
    );
    // Issue 46: the shard pods run tminus itself, no shell; `--shard auto/N`
    // turns the 0-based JOB_COMPLETION_INDEX into the 1-based shard, and
    // each pod's folder comes from Kubernetes' own $(VAR) expansion.
    let c = &shards["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["command"], serde_json::json!(["tminus"]), "no shell");
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "run");
    let line = format!("tminus {}", args.join(" "));
    assert_eq!(
        args.windows(2).find(|w| w[0] == "--shard").map(|w| w[1]),
        Some(format!("auto/{n}").as_str()),
        "{line}"
    );
    assert!(
        line.contains("--report-dir /results/shard-$(JOB_COMPLETION_INDEX)"),
        "{line}"
    );
    assert!(line.contains("--start-at $(START_AT)"), "{line}");
    let runs = vec![line];
    assert_eq!(shard_count(&runs[0]), n);

    let merge = jobs[1];
    let merges = command_lines(&script(merge), "merge");
    assert_eq!(merges.len(), 1, "{}", script(merge));
    // The merge waits for all N manifests, bounded.
    assert!(script(merge).contains(&format!("-ge {n}")) && script(merge).contains("timeout"));
    // Both Jobs share the results volume and the suite.
    let claims = |j: &Value| -> BTreeSet<String> {
        j["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                v["persistentVolumeClaim"]["claimName"]
                    .as_str()
                    .or(v["configMap"]["name"].as_str())
                    .map(str::to_owned)
            })
            .collect()
    };
    assert_eq!(claims(shards), claims(merge));
    let pvc = docs
        .iter()
        .find(|d| d["kind"] == "PersistentVolumeClaim")
        .expect("a results volume");
    assert!(claims(shards).contains(pvc["metadata"]["name"].as_str().unwrap()));
    for j in &jobs {
        assert!(
            j["spec"]["activeDeadlineSeconds"].is_u64(),
            "every Job is bounded"
        );
    }
    assert_flags_exist(&runs, &merges);
}

#[test]
fn the_actions_example_is_a_matrix_of_shards_and_a_gating_merge() {
    let w = &documents(WORKFLOW)[0];
    let jobs = w["jobs"].as_object().expect("jobs");
    let steps = |j: &str| jobs[j]["steps"].as_array().expect("steps").clone();
    let scripts = |j: &str| -> String {
        steps(j)
            .iter()
            .filter_map(|s| s["run"].as_str().map(str::to_owned))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let matrix: Vec<u64> = jobs["shard"]["strategy"]["matrix"]["shard"]
        .as_array()
        .expect("a shard matrix")
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let runs = command_lines(&scripts("shard"), "run");
    assert_eq!(runs.len(), 1, "{runs:?}");
    let n = shard_count(&runs[0]);
    assert_eq!(matrix, (1..=n).collect::<Vec<_>>(), "the matrix is 1..=N");
    assert_eq!(jobs["shard"]["strategy"]["fail-fast"], false);
    // One --start-at for all, from a job before the matrix.
    assert!(runs[0].contains("--start-at"));
    assert!(jobs["build"]["outputs"]["start_at"].is_string());
    let upload = steps("shard")
        .into_iter()
        .find(|s| s["uses"] == "actions/upload-artifact@v4")
        .expect("shards upload their figures");
    assert_eq!(upload["if"], "always()");

    let merge = &jobs["merge"];
    assert_eq!(merge["needs"], "shard");
    assert_eq!(merge["if"], "always()");
    assert!(steps("merge")
        .iter()
        .any(|s| s["uses"] == "actions/download-artifact@v4" && s["with"]["pattern"] == "shard-*"));
    let merges = command_lines(&scripts("merge"), "merge");
    assert_eq!(merges.len(), 1, "{merges:?}");
    assert_eq!(
        jobs["deploy"]["needs"], "merge",
        "the merge gates the deploy"
    );
    assert_flags_exist(&runs, &merges);
}

#[test]
fn command_extraction_finds_commands_and_counts() {
    let lines = command_lines(
        "chmod +x t\n./bin/tminus run a \\\n  --shard \"2/7\" --x",
        "run",
    );
    assert_eq!(lines, ["tminus run a    --shard \"2/7\" --x"]);
    assert_eq!(shard_count(&lines[0]), 7);
    assert!(command_lines("tminus merge d", "run").is_empty());
}

/// Issue 46: `--shard auto` in a pod of an Indexed Job: JOB_COMPLETION_INDEX
/// 1 of JOB_COMPLETIONS 2 runs shard 2/2 (its files say so); outside a Job
/// (no index) it is a usage error that names the fix, before anything is sent.
#[test]
fn shard_auto_takes_the_pods_index_and_the_jobs_count() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tiny.yaml"),
        r#"suite: tiny
load:
  id: tiny
  users: 2
  hatch_rate: 20
  iterations: 2
  max_rate: 100/s
  requests:
    - name: count
      request: { path: /public/v1/messages/count, headers: { Authorization: "Bearer ref_load_key" } }
"#,
    )
    .unwrap();
    let args = ["run", "tiny.yaml", "--shard", "auto", "--report-dir", "r"];
    let out = tminus(
        dir.path(),
        &args,
        &[("JOB_COMPLETION_INDEX", "1"), ("JOB_COMPLETIONS", "2")],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let manifest = dir.path().join("r/load-tiny-tiny.shard-2-of-2.shard.json");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(m["shard"], serde_json::json!({"index": 2, "count": 2}));

    let out = tminus(dir.path(), &args, &[], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("JOB_COMPLETION_INDEX")
            && stderr(&out).contains("it is not set here"),
        "{}",
        stderr(&out)
    );
    let out = tminus(
        dir.path(),
        &["run", "tiny.yaml", "--shard", "auto/3", "--report-dir", "r"],
        &[("JOB_COMPLETION_INDEX", "0"), ("JOB_COMPLETIONS", "2")],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("agree"), "{}", stderr(&out));
}
