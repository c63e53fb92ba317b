//! The certification commands: `tminus bundle REPORT_DIR`, `tminus verify
//! FILE.tar.gz`, and the `--bundle`/`--sign-key` step of `tminus run`. The
//! work is in `bundle`; here are the flags, the messages and the exit codes
//! (bundle: 0, or 2 for a bad key file, 3 when it cannot be written; verify:
//! 0 verified, 1 something differs, 3 unreadable input).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ed25519_dalek::SigningKey;

use crate::bundle::{self, verify::Verified};
use crate::cli::{BundleArgs, VerifyArgs};
use crate::exit;
use crate::redact::Redactor;

/// Reads `--sign-key` into `redactor` before anything runs: a key that
/// cannot be read is a usage error (exit 2), and the key is masked in every
/// output from then on.
pub fn load_key(path: Option<&Path>, redactor: &Redactor) -> Result<Option<SigningKey>, i32> {
    path.map(|p| bundle::keys::read_signing_key(p, redactor))
        .transpose()
        .map_err(|e| {
            eprintln!("error: {}", redactor.redact(&e));
            exit::INVALID
        })
}

fn say_packed(out: &Path, lines: &[String], redactor: &Redactor) {
    for l in lines {
        eprintln!("  {}", redactor.redact(l));
    }
    eprintln!("bundle: {}", out.display());
}

/// The bundle step of `tminus run`: the report files this run wrote (JUnit,
/// JSON, HTML, the Markdown summary, and whatever else it wrote into the
/// report folder since `since`, such as load figures). Returns the exit
/// code once the bundle is written (3 when it cannot be).
pub struct RunBundle {
    pub out: PathBuf,
    pub key: Option<SigningKey>,
    pub report_dir: PathBuf,
    /// The JSON report, then the other report files named on the command line.
    pub json: PathBuf,
    pub files: Vec<PathBuf>,
    pub since: SystemTime,
}

impl RunBundle {
    pub fn pack(&self, code: i32, redactor: &Redactor) -> i32 {
        let fresh = |p: &Path| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= self.since)
        };
        if !fresh(&self.json) {
            eprintln!(
                "error: no bundle: {} was not written by this run",
                self.json.display()
            );
            return exit::worst(code, exit::RUN_BROKEN);
        }
        let mut contents = bundle::Contents {
            report_json: self.json.clone(),
            reports: Vec::new(),
        };
        let mut add = |p: &Path| {
            let name = p.strip_prefix(&self.report_dir).map_or_else(
                |_| p.file_name().map(|n| n.to_string_lossy().into_owned()),
                |r| Some(r.to_string_lossy().replace('\\', "/")),
            );
            if let Some(n) = name {
                let n = format!("reports/{n}");
                if !contents.reports.iter().any(|(x, _)| *x == n) {
                    contents.reports.push((n, p.to_path_buf()));
                }
            }
        };
        for f in std::iter::once(&self.json).chain(&self.files) {
            if f.is_file() {
                add(f);
            }
        }
        if let Ok(dir) = bundle::report_dir_contents(&self.report_dir, Some(&self.out)) {
            for (_, p) in dir.reports {
                if fresh(&p) {
                    add(&p);
                }
            }
        }
        contents.reports.sort();
        match bundle::pack(&contents, &self.out, self.key.as_ref()) {
            Ok(lines) => {
                say_packed(&self.out, &lines, redactor);
                code
            }
            Err(e) => {
                eprintln!("error: cannot make the bundle: {}", redactor.redact(&e));
                exit::worst(code, exit::RUN_BROKEN)
            }
        }
    }
}

/// `tminus bundle REPORT_DIR [-o FILE] [--sign-key KEY]`.
pub fn cmd_bundle(a: BundleArgs) -> i32 {
    let redactor = Redactor::new();
    let key = match load_key(a.sign_key.as_deref(), &redactor) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let out = a.output.clone().unwrap_or_else(|| {
        let dir = std::path::absolute(&a.report_dir).unwrap_or_else(|_| a.report_dir.clone());
        let name = dir
            .file_name()
            .map_or_else(|| "reports".into(), |n| n.to_string_lossy().into_owned());
        dir.with_file_name(format!("{name}.tar.gz"))
    });
    let contents = match bundle::report_dir_contents(&a.report_dir, Some(&out)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {}", redactor.redact(&e));
            return exit::RUN_BROKEN;
        }
    };
    match bundle::pack(&contents, &out, key.as_ref()) {
        Ok(lines) => {
            say_packed(&out, &lines, &redactor);
            exit::OK
        }
        Err(e) => {
            eprintln!("error: cannot make the bundle: {}", redactor.redact(&e));
            exit::RUN_BROKEN
        }
    }
}

/// `tminus verify FILE.tar.gz --key PUBLIC_KEY.pem [--allow-unsigned]`:
/// what was checked on stdout, one line each; what differs on stderr.
pub fn cmd_verify(a: VerifyArgs) -> i32 {
    let opts = bundle::verify::VerifyOptions {
        key: a.key.as_deref(),
        allow_unsigned: a.allow_unsigned,
    };
    match bundle::verify::verify(&a.bundle, &opts) {
        Verified::Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            exit::OK
        }
        Verified::Differs(lines, why) => {
            for l in lines {
                println!("{l}");
            }
            println!("FAIL  {why}");
            eprintln!("error: {} does not verify: {why}", a.bundle.display());
            exit::CHECK_FAILED
        }
        Verified::Unreadable(e) => {
            eprintln!("error: {e}");
            exit::RUN_BROKEN
        }
    }
}
