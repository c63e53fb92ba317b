//! Issue 28: a certification run packed as a signed bundle, verified by
//! `tminus verify` and by an independent implementation
//! (`tests/support/verify_bundle.py`, Python `cryptography`), and every
//! tampering (a byte of any file, the manifest, the signature, a file added
//! or removed) named by `verify` with exit 1.
//!
//! Keys are made by `openssl genpkey -algorithm ed25519`, as a partner
//! would make them; `.ci/run` installs openssl and python3-cryptography.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{repo, stderr, stdout, tminus};

const DEADLINE: Duration = Duration::from_secs(120);
const API_KEY: &str = "ref_test_key_a";

/// A suite that reads its credential from a secret, and a check of the
/// embedded reference with it.
const SUITE: &str = r#"suite: certified
version: "2.1"
target:
  headers: { Authorization: "Bearer ${secret.TMINUS_API_KEY}" }
checks:
  - id: contacts-listed
    steps:
      - request: { path: /public/v1/contacts }
        expect: { status: 200 }
  - id: health
    steps:
      - request: { path: /healthz }
        expect: { status: 200 }
"#;

/// `(private PKCS#8 PEM, public SPKI PEM)` made by openssl in `dir`.
fn openssl_keys(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let private = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub.pem"));
    let ok = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&private)
        .status()
        .expect("openssl is installed (.ci/run installs it)");
    assert!(ok.success());
    let ok = Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&private)
        .arg("-out")
        .arg(&public)
        .status()
        .expect("openssl");
    assert!(ok.success());
    (private, public)
}

/// The PEM body of a key file (what must never be printed).
fn pem_body(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect()
}

/// The bundle's entries, in order.
fn entries(bundle: &Path) -> Vec<(String, Vec<u8>)> {
    let f = std::fs::File::open(bundle).unwrap();
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
    a.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            (name, b)
        })
        .collect()
}

fn write_entries(path: &Path, entries: &[(String, Vec<u8>)]) {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut t = tar::Builder::new(gz);
    for (name, bytes) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        t.append_data(&mut h, name, bytes.as_slice()).unwrap();
    }
    std::fs::write(path, t.into_inner().unwrap().finish().unwrap()).unwrap();
}

fn envelope(entries: &[(String, Vec<u8>)]) -> serde_json::Value {
    let e = &entries
        .iter()
        .find(|(n, _)| n == "manifest.dsse.json")
        .expect("an envelope")
        .1;
    serde_json::from_slice(e).unwrap()
}

fn statement(entries: &[(String, Vec<u8>)]) -> serde_json::Value {
    use base64::Engine;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(envelope(entries)["payload"].as_str().unwrap())
        .unwrap();
    serde_json::from_slice(&payload).unwrap()
}

/// A `PYTHONPATH` under which `import cryptography` works: none needed when
/// the system has it (Debian's python3-cryptography, which `.ci/run`
/// installs); otherwise it is installed once from PyPI into `target/`, so
/// `cargo test --locked` sets itself up on a fresh machine too.
fn python_path() -> &'static str {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let has = |path: &str| {
            Command::new("python3")
                .args(["-c", "import cryptography"])
                .env("PYTHONPATH", path)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if has("") {
            return String::new();
        }
        let deps = repo().join("target/test-python");
        let deps = deps.to_str().unwrap().to_owned();
        if !has(&deps) {
            let out = Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(["--target", &deps, "cryptography"])
                .output()
                .expect("python3 -m pip");
            assert!(
                out.status.success(),
                "python3 has no `cryptography` and pip could not install it: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        deps
    })
}

fn python_verify(dir: &Path, bundle: &Path, key: &Path) -> std::process::Output {
    Command::new("python3")
        .env("PYTHONPATH", python_path())
        .arg(repo().join("tests/support/verify_bundle.py"))
        .arg(bundle)
        .arg(key)
        .current_dir(dir)
        .output()
        .expect("python3 is installed (.ci/run installs python3-cryptography)")
}

/// A signed certification run of [`SUITE`] against the embedded reference.
struct Certified {
    dir: tempfile::TempDir,
    bundle: PathBuf,
    public: PathBuf,
    private: PathBuf,
}

fn certify() -> Certified {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("certified.yaml"), SUITE).unwrap();
    let (private, public) = openssl_keys(dir.path(), "signer");
    let out = tminus(
        dir.path(),
        &[
            "run",
            "certified.yaml",
            "--bundle",
            "out/cert.tar.gz",
            "--sign-key",
            private.to_str().unwrap(),
        ],
        &[("TMINUS_API_KEY", API_KEY)],
        DEADLINE,
    );
    let (o, e) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{e}");
    let body = pem_body(&private);
    assert!(
        !o.contains(&body) && !e.contains(&body),
        "key printed:\n{e}"
    );
    assert!(!e.contains(API_KEY), "{e}");
    assert!(e.contains("bundle: out/cert.tar.gz"), "{e}");
    Certified {
        bundle: dir.path().join("out/cert.tar.gz"),
        dir,
        public,
        private,
    }
}

#[test]
fn a_signed_bundle_verifies_with_tminus_and_with_python() {
    let c = certify();
    let files = entries(&c.bundle);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "reports/junit.xml",
        "reports/report.json",
        "reports/report.html",
        "suites/certified.yaml",
        "manifest.dsse.json",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    // The suite as run, byte for byte; no secret and no key in any file.
    let suite = &files
        .iter()
        .find(|(n, _)| n == "suites/certified.yaml")
        .unwrap()
        .1;
    assert_eq!(suite, SUITE.as_bytes());
    let body = pem_body(&c.private);
    for (name, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(API_KEY), "{name} holds the API key");
        assert!(!text.contains(&body), "{name} holds the signing key");
    }
    let env = envelope(&files);
    assert_eq!(env["payloadType"], "application/vnd.in-toto+json");
    let s = statement(&files);
    assert_eq!(s["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(
        s["predicateType"],
        "https://in-toto.io/attestation/test-result/v0.1"
    );
    let p = &s["predicate"];
    assert_eq!(p["result"], "PASSED", "{p}");
    assert_eq!(p["tminus"]["complete"], true);
    assert_eq!(p["tminus"]["suites"][0]["version"], "2.1");
    assert_eq!(p["configuration"][0]["name"], "suites/certified.yaml");
    let secrets = p["tminus"]["secrets_redacted"].as_array().unwrap();
    assert!(secrets.contains(&"TMINUS_API_KEY".into()), "{secrets:?}");
    assert!(secrets.contains(&"--sign-key".into()), "{secrets:?}");
    let passed = p["passedTests"].as_array().unwrap();
    assert!(passed.contains(&"certified/health".into()), "{passed:?}");
    assert_eq!(s["subject"].as_array().unwrap().len(), files.len() - 1);

    let out = tminus(
        c.dir.path(),
        &[
            "verify",
            c.bundle.to_str().unwrap(),
            "--key",
            c.public.to_str().unwrap(),
        ],
        &[],
        DEADLINE,
    );
    let o = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{o}{}", stderr(&out));
    assert!(o.contains("ok  signature of manifest.dsse.json"), "{o}");
    for n in names.iter().filter(|n| **n != "manifest.dsse.json") {
        assert!(o.contains(&format!("  {n}\n")), "{n} not listed:\n{o}");
    }
    assert!(o.contains("result PASSED"), "{o}");

    let py = python_verify(c.dir.path(), &c.bundle, &c.public);
    let po = String::from_utf8_lossy(&py.stdout);
    assert_eq!(
        py.status.code(),
        Some(0),
        "{po}{}",
        String::from_utf8_lossy(&py.stderr)
    );
    assert!(po.contains("ok signature manifest.dsse.json"), "{po}");
    assert!(po.contains("verified 4 files; result PASSED"), "{po}");
}

/// `verify` on `entries` written to a fresh file: exit code and output.
fn verify_tampered(c: &Certified, name: &str, entries: &[(String, Vec<u8>)]) -> (i32, String) {
    let path = c.dir.path().join(format!("tampered-{name}.tar.gz"));
    write_entries(&path, entries);
    let out = tminus(
        c.dir.path(),
        &[
            "verify",
            path.to_str().unwrap(),
            "--key",
            c.public.to_str().unwrap(),
        ],
        &[],
        DEADLINE,
    );
    (
        out.status.code().unwrap_or(-1),
        stdout(&out) + &stderr(&out),
    )
}

#[test]
fn tampering_with_any_byte_is_named_by_verify() {
    let c = certify();
    let files = entries(&c.bundle);
    // Rewritten untouched, the bundle still verifies: what fails below is
    // the byte changed, not the rewriting.
    let (code, out) = verify_tampered(&c, "none", &files);
    assert_eq!(code, 0, "{out}");

    for (i, (name, bytes)) in files.iter().enumerate() {
        if name == "manifest.dsse.json" {
            continue;
        }
        for at in [0, bytes.len() / 2, bytes.len() - 1] {
            let mut t = files.clone();
            t[i].1[at] ^= 0x01;
            let (code, out) = verify_tampered(&c, "file", &t);
            assert_eq!(code, 1, "{name}@{at}: {out}");
            assert!(
                out.contains(&format!("FAIL  {name}: its SHA-256 is")),
                "{name}@{at}: {out}"
            );
        }
    }

    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let at = files
        .iter()
        .position(|(n, _)| n == "manifest.dsse.json")
        .unwrap();
    // The manifest: one byte of the Statement changed (a digest made to
    // match a tampered file), re-encoded as valid base64.
    let mut env = envelope(&files);
    let mut payload = b64.decode(env["payload"].as_str().unwrap()).unwrap();
    let k = payload.len() / 2;
    payload[k] ^= 0x01;
    env["payload"] = b64.encode(&payload).into();
    let mut t = files.clone();
    t[at].1 = serde_json::to_vec(&env).unwrap();
    let (code, out) = verify_tampered(&c, "manifest", &t);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  manifest.dsse.json: signature: signature 1 does not verify"),
        "{out}"
    );
    let py_path = c.dir.path().join("tampered-manifest.tar.gz");
    let py = python_verify(c.dir.path(), &py_path, &c.public);
    assert_eq!(
        py.status.code(),
        Some(1),
        "python accepted a tampered manifest"
    );

    // The signature: one byte changed.
    let mut env = envelope(&files);
    let mut sig = b64
        .decode(env["signatures"][0]["sig"].as_str().unwrap())
        .unwrap();
    sig[0] ^= 0x01;
    env["signatures"][0]["sig"] = b64.encode(&sig).into();
    let mut t = files.clone();
    t[at].1 = serde_json::to_vec(&env).unwrap();
    let (code, out) = verify_tampered(&c, "sig", &t);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  manifest.dsse.json: signature"), "{out}");

    // The envelope's own bytes: a byte of its JSON changed.
    let mut t = files.clone();
    t[at].1[0] ^= 0x01;
    let (code, out) = verify_tampered(&c, "envelope", &t);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  manifest.dsse.json: not a DSSE envelope"),
        "{out}"
    );

    // A file added, a file removed.
    let mut t = files.clone();
    t.push(("reports/extra.txt".into(), b"added".to_vec()));
    let (code, out) = verify_tampered(&c, "added", &t);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  reports/extra.txt: in the bundle but not in the manifest"),
        "{out}"
    );
    let t: Vec<_> = files
        .iter()
        .filter(|(n, _)| n != "reports/junit.xml")
        .cloned()
        .collect();
    let (code, out) = verify_tampered(&c, "removed", &t);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  reports/junit.xml: named in the manifest, missing"),
        "{out}"
    );

    // Another signer's key: the signature does not verify with it.
    let (_, other) = openssl_keys(c.dir.path(), "other");
    let out = tminus(
        c.dir.path(),
        &[
            "verify",
            c.bundle.to_str().unwrap(),
            "--key",
            other.to_str().unwrap(),
        ],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("it names key"), "{}", stdout(&out));
    let _ = &c.private;
}

#[test]
fn bundle_command_packs_a_report_folder_and_unsigned_needs_allow_unsigned() {
    let c = certify();
    let reports = c.dir.path().join("reports");
    let out = tminus(
        c.dir.path(),
        &["bundle", "reports", "-o", "unsigned.tar.gz"],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("unsigned"), "{}", stderr(&out));
    let verify = |args: &[&str]| {
        let mut all = vec!["verify", "unsigned.tar.gz"];
        all.extend_from_slice(args);
        tminus(c.dir.path(), &all, &[], DEADLINE)
    };
    let refused = verify(&["--key", c.public.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    assert!(
        stdout(&refused).contains("unsigned"),
        "{}",
        stdout(&refused)
    );
    let allowed = verify(&["--allow-unsigned"]);
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    assert!(
        stdout(&allowed).contains("unsigned"),
        "{}",
        stdout(&allowed)
    );
    // Neither a key nor --allow-unsigned: a usage problem, exit 3.
    let neither = verify(&[]);
    assert_eq!(neither.status.code(), Some(3), "{}", stderr(&neither));

    // Signed from the folder, the same files as `run --bundle`.
    let out = tminus(
        c.dir.path(),
        &[
            "bundle",
            "reports",
            "-o",
            "again.tar.gz",
            "--sign-key",
            c.private.to_str().unwrap(),
        ],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let again = c.dir.path().join("again.tar.gz");
    let names = |p: &Path| -> Vec<String> { entries(p).into_iter().map(|(n, _)| n).collect() };
    assert_eq!(names(&again), names(&c.bundle));
    let py = python_verify(c.dir.path(), &again, &c.public);
    assert_eq!(
        py.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&py.stdout)
    );

    // A suite edited since the run is not the suite that was certified.
    std::fs::write(
        c.dir.path().join("certified.yaml"),
        SUITE.replace("2.1", "2.2"),
    )
    .unwrap();
    let out = tminus(
        c.dir.path(),
        &["bundle", "reports", "-o", "x.tar.gz"],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("suite certified.yaml has changed since the run"),
        "{}",
        stderr(&out)
    );
    assert!(reports.join("report.json").is_file());
}

#[test]
fn unreadable_input_exits_3_and_links_or_escaping_names_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let (_, public) = openssl_keys(dir.path(), "k");
    let garbage = dir.path().join("garbage.tar.gz");
    std::fs::write(&garbage, b"not a bundle at all").unwrap();
    let run = |bundle: &str, key: &str| {
        tminus(dir.path(), &["verify", bundle, "--key", key], &[], DEADLINE)
    };
    let key = public.to_str().unwrap();
    let out = run(garbage.to_str().unwrap(), key);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a readable tar.gz"),
        "{}",
        stderr(&out)
    );
    let out = run("missing.tar.gz", key);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("missing.tar.gz"), "{}", stderr(&out));
    let out = run(garbage.to_str().unwrap(), "nokey.pem");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("nokey.pem"), "{}", stderr(&out));

    // A symlink entry is refused, never followed.
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut t = tar::Builder::new(gz);
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_size(0);
    t.append_link(&mut h, "reports/report.json", "/etc/passwd")
        .unwrap();
    let link = dir.path().join("link.tar.gz");
    std::fs::write(&link, t.into_inner().unwrap().finish().unwrap()).unwrap();
    let out = run(link.to_str().unwrap(), key);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("not a regular file"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_run_that_stopped_early_is_bundled_as_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let suite = "suite: early\nchecks:\n  - id: broken\n    steps:\n      - request: { path: /healthz }\n        expect: { status: 418 }\n  - id: never-run\n    steps:\n      - request: { path: /healthz }\n        expect: { status: 200 }\n";
    std::fs::write(dir.path().join("early.yaml"), suite).unwrap();
    let out = tminus(
        dir.path(),
        &["run", "early.yaml", "--fail-fast", "--bundle", "b.tar.gz"],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let s = statement(&entries(&dir.path().join("b.tar.gz")));
    let t = &s["predicate"]["tminus"];
    assert_eq!(t["complete"], false, "{t}");
    assert!(
        t["summary"]
            .as_str()
            .unwrap()
            .contains("incomplete: early/never-run did not run"),
        "{t}"
    );
    assert_eq!(s["predicate"]["result"], "FAILED");
    assert_eq!(
        s["predicate"]["failedTests"],
        serde_json::json!(["early/broken"])
    );
}
