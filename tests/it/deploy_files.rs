//! Issue 46, what a cluster's admission policies and a container build read:
//! every workload in `examples/k8s/` passes the rules of Kubernetes' Pod
//! Security "restricted" profile plus the usual policy-engine extras
//! (read-only root filesystem, requests and limits, probes on long-running
//! pods, a writable emptyDir where tminus writes), the kustomization names
//! files that exist, and the Dockerfile keeps its promises (the builder's
//! Rust is Cargo.toml's rust-version, a numeric non-root USER the manifests
//! run as, WORKDIR /work, ENTRYPOINT ["tminus"], OCI labels). Each rule is
//! proven to bite on a mutated copy of a shipped manifest.

use crate::common;

use std::collections::BTreeSet;

use common::repo;
use serde_json::Value;

fn text(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn documents(path: &str) -> Vec<Value> {
    serde_saphyr::from_multiple(&text(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every `examples/k8s/*.yaml` but the kustomization, by name.
fn manifests() -> Vec<(String, Vec<Value>)> {
    let mut files: Vec<String> = std::fs::read_dir(repo().join("examples/k8s"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|n| {
            let docs = documents(&format!("examples/k8s/{n}"));
            (n, docs)
        })
        .collect()
}

/// The pod spec of a workload document, with whether it runs until stopped
/// (probes are required there), or None for other kinds.
fn pod_spec(doc: &Value) -> Option<(&Value, bool)> {
    match doc["kind"].as_str()? {
        "Deployment" | "StatefulSet" | "DaemonSet" => {
            Some((&doc["spec"]["template"]["spec"], true))
        }
        "Job" => Some((&doc["spec"]["template"]["spec"], false)),
        "CronJob" => Some((
            &doc["spec"]["jobTemplate"]["spec"]["template"]["spec"],
            false,
        )),
        "Pod" => Some((&doc["spec"], false)),
        _ => None,
    }
}

/// What an admission policy would refuse in a pod spec, one line each.
fn refusals(pod: &Value, long_running: bool) -> Vec<String> {
    let mut out = Vec::new();
    let pod_sc = &pod["securityContext"];
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        if pod[host] == true {
            out.push(format!("pod: {host}"));
        }
    }
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|k| pod[*k].as_array().into_iter().flatten())
        .collect();
    if containers.is_empty() {
        out.push("pod: no containers".into());
    }
    let empty_dirs: BTreeSet<&str> = pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["emptyDir"].is_object())
        .filter_map(|v| v["name"].as_str())
        .collect();
    for c in containers {
        let name = c["name"].as_str().unwrap_or("?");
        let sc = &c["securityContext"];
        // Pod Security "restricted": non-root, seccomp, no escalation, ALL dropped.
        let non_root = sc["runAsNonRoot"] == true
            || (sc["runAsNonRoot"].is_null() && pod_sc["runAsNonRoot"] == true);
        if !non_root {
            out.push(format!("{name}: runAsNonRoot is not true"));
        }
        for ctx in [pod_sc, sc] {
            if ctx["runAsUser"] == 0 {
                out.push(format!("{name}: runAsUser 0"));
            }
        }
        let seccomp = if sc["seccompProfile"].is_null() {
            &pod_sc["seccompProfile"]
        } else {
            &sc["seccompProfile"]
        };
        if !matches!(
            seccomp["type"].as_str(),
            Some("RuntimeDefault" | "Localhost")
        ) {
            out.push(format!("{name}: seccompProfile is not RuntimeDefault"));
        }
        if sc["allowPrivilegeEscalation"] != false {
            out.push(format!("{name}: allowPrivilegeEscalation is not false"));
        }
        if sc["privileged"] == true {
            out.push(format!("{name}: privileged"));
        }
        let drops_all = sc["capabilities"]["drop"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "ALL"));
        if !drops_all {
            out.push(format!("{name}: capabilities do not drop ALL"));
        }
        if sc["capabilities"]["add"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            out.push(format!("{name}: adds capabilities"));
        }
        if sc["readOnlyRootFilesystem"] != true {
            out.push(format!("{name}: readOnlyRootFilesystem is not true"));
        }
        for kind in ["requests", "limits"] {
            for r in ["cpu", "memory"] {
                if c["resources"][kind][r].is_null() {
                    out.push(format!("{name}: no resources.{kind}.{r}"));
                }
            }
        }
        let image = c["image"].as_str().unwrap_or("");
        if !image.contains(':') || image.ends_with(":latest") {
            out.push(format!("{name}: image `{image}` has no fixed tag"));
        }
        if long_running {
            for probe in ["livenessProbe", "readinessProbe"] {
                if !c[probe].is_object() {
                    out.push(format!("{name}: no {probe}"));
                }
            }
        }
        // A read-only root needs somewhere to write: /tmp on an emptyDir.
        let tmp_is_empty_dir = c["volumeMounts"].as_array().into_iter().flatten().any(|m| {
            m["mountPath"] == "/tmp" && m["name"].as_str().is_some_and(|n| empty_dirs.contains(n))
        });
        if !tmp_is_empty_dir {
            out.push(format!("{name}: /tmp is not an emptyDir"));
        }
    }
    out
}

#[test]
fn every_shipped_workload_passes_the_admission_rules() {
    let mut workloads = 0;
    for (file, docs) in manifests() {
        for doc in &docs {
            if let Some((pod, long)) = pod_spec(doc) {
                workloads += 1;
                let r = refusals(pod, long);
                assert!(
                    r.is_empty(),
                    "{file} {} {}: {r:?}",
                    doc["kind"],
                    doc["metadata"]["name"]
                );
            }
        }
    }
    // serve's Deployment and the burst's two Jobs.
    assert!(workloads >= 3, "{workloads} workloads");
}

/// A rule and a change to a pod spec that breaks it.
type Mutation<'a> = (&'a str, &'a dyn Fn(&mut Value));

/// Each rule fails a copy of the serve Deployment that breaks it, so the
/// test above cannot pass by checking nothing.
#[test]
fn the_rules_refuse_a_manifest_without_security_context_limits_or_probes() {
    let docs = documents("examples/k8s/serve.yaml");
    let deploy = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let pod = &deploy["spec"]["template"]["spec"];
    assert!(refusals(pod, true).is_empty());
    let mutated = |f: &dyn Fn(&mut Value)| {
        let mut p = pod.clone();
        f(&mut p);
        refusals(&p, true)
    };
    let no_sc = mutated(&|p| {
        p.as_object_mut().unwrap().remove("securityContext");
        p["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("securityContext");
    });
    for rule in [
        "runAsNonRoot is not true",
        "seccompProfile is not RuntimeDefault",
        "allowPrivilegeEscalation is not false",
        "capabilities do not drop ALL",
        "readOnlyRootFilesystem is not true",
    ] {
        assert!(no_sc.iter().any(|r| r.contains(rule)), "{rule}: {no_sc:?}");
    }
    let no_limits = mutated(&|p| {
        p["containers"][0]["resources"]
            .as_object_mut()
            .unwrap()
            .remove("limits");
    });
    assert_eq!(
        no_limits,
        [
            "tminus: no resources.limits.cpu",
            "tminus: no resources.limits.memory"
        ]
    );
    let checks: [Mutation; 7] = [
        ("runAsUser 0", &|p| {
            p["securityContext"]["runAsUser"] = 0.into()
        }),
        ("privileged", &|p| {
            p["containers"][0]["securityContext"]["privileged"] = true.into()
        }),
        ("adds capabilities", &|p| {
            p["containers"][0]["securityContext"]["capabilities"]["add"] =
                serde_json::json!(["NET_ADMIN"])
        }),
        ("no livenessProbe", &|p| {
            p["containers"][0]
                .as_object_mut()
                .unwrap()
                .remove("livenessProbe");
        }),
        ("no resources.requests.memory", &|p| {
            p["containers"][0]["resources"]["requests"]
                .as_object_mut()
                .unwrap()
                .remove("memory");
        }),
        ("/tmp is not an emptyDir", &|p| {
            for v in p["volumes"].as_array_mut().unwrap() {
                if v["name"] == "tmp" {
                    v.as_object_mut().unwrap().remove("emptyDir");
                }
            }
        }),
        ("has no fixed tag", &|p| {
            p["containers"][0]["image"] = "ghcr.io/owner/tminus:latest".into()
        }),
    ];
    for (rule, f) in checks {
        let r = mutated(f);
        assert!(r.iter().any(|x| x.contains(rule)), "{rule}: {r:?}");
    }
    // A pod-level runAsNonRoot is enough, unless the container turns it off.
    let r = mutated(&|p| {
        p["containers"][0]["securityContext"]["runAsNonRoot"] = false.into();
    });
    assert!(r.iter().any(|x| x.contains("runAsNonRoot")), "{r:?}");
}

#[test]
fn serve_writes_its_reports_to_an_empty_dir_and_runs_as_the_images_user() {
    let docs = documents("examples/k8s/serve.yaml");
    let deploy = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let pod = &deploy["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let reports = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find_map(|a| {
            a.strip_prefix("--reports=")
                .or(a.strip_prefix("--report-dir="))
        })
        .expect("serve is given its reports folder");
    let reports = reports.split_whitespace().next().unwrap();
    let mount = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == reports)
        .unwrap_or_else(|| panic!("nothing mounted at {reports}"));
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    assert!(volume["emptyDir"].is_object(), "{volume}");
    assert_ne!(mount["readOnly"], true);
    // The manifests' user is the image's.
    let user = dockerfile_user();
    for (file, docs) in manifests() {
        for doc in &docs {
            if let Some((pod, _)) = pod_spec(doc) {
                assert_eq!(
                    pod["securityContext"]["runAsUser"].as_u64(),
                    Some(user),
                    "{file}: runAsUser is not the Dockerfile's USER"
                );
            }
        }
    }
}

#[test]
fn the_kustomization_names_shipped_files_and_the_manifests_image() {
    let k = &documents("examples/k8s/kustomization.yaml")[0];
    assert_eq!(k["kind"], "Kustomization");
    let resources: Vec<&str> = k["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(resources.contains(&"serve.yaml"), "{resources:?}");
    for r in &resources {
        assert!(
            repo().join("examples/k8s").join(r).is_file(),
            "{r} is not shipped"
        );
    }
    let image = k["images"][0]["name"].as_str().unwrap();
    let serve = text("examples/k8s/serve.yaml");
    assert!(serve.contains(&format!("image: {image}:")), "{image}");
}

/// The Dockerfile's runtime USER, numeric and not root.
fn dockerfile_user() -> u64 {
    let d = text("Dockerfile");
    let users: Vec<&str> = d
        .lines()
        .filter_map(|l| l.trim().strip_prefix("USER "))
        .collect();
    assert_eq!(users.len(), 1, "{users:?}");
    let uid = users[0].split(':').next().unwrap();
    let uid: u64 = uid
        .parse()
        .unwrap_or_else(|_| panic!("USER {uid} is not numeric"));
    assert_ne!(uid, 0, "USER is root");
    uid
}

#[test]
fn the_dockerfile_pins_cargos_rust_and_runs_tminus_as_a_numeric_user() {
    let d = text("Dockerfile");
    let cargo = text("Cargo.toml");
    let msrv = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("Cargo.toml has a rust-version")
        .trim_matches('"');
    assert!(
        d.lines()
            .any(|l| l.trim() == format!("ARG RUST_VERSION={msrv}")),
        "the builder's Rust is not Cargo.toml's rust-version {msrv}"
    );
    assert!(d.contains("FROM docker.io/library/rust:${RUST_VERSION}-slim"));
    let froms: Vec<&str> = d.lines().filter(|l| l.starts_with("FROM ")).collect();
    // The runtime's base is Debian slim unless the smoke test gives its own.
    assert!(d.lines().any(
        |l| l.starts_with("ARG RUNTIME_BASE=docker.io/library/debian:") && l.ends_with("-slim")
    ));
    assert!(
        froms.contains(&"FROM ${RUNTIME_BASE} AS runtime-base"),
        "{froms:?}"
    );
    assert!(
        froms.last().unwrap().ends_with("AS runtime"),
        "the last stage is the runtime: {froms:?}"
    );
    assert!(d.contains("ca-certificates"));
    dockerfile_user();
    assert!(d.lines().any(|l| l.trim() == "WORKDIR /work"));
    assert!(d.lines().any(|l| l.trim() == r#"ENTRYPOINT ["tminus"]"#));
    for label in [
        "org.opencontainers.image.title",
        "org.opencontainers.image.version",
        "org.opencontainers.image.source",
        "org.opencontainers.image.licenses=\"Apache-2.0\"",
        "org.opencontainers.image.revision",
    ] {
        assert!(d.contains(label), "no label {label}");
    }
    // The licence the image and Cargo.toml declare is the shipped text.
    assert!(cargo.contains("license = \"Apache-2.0\""));
    assert!(text("LICENSE").contains("Apache License\n                           Version 2.0"));
}
