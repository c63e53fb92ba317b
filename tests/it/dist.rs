//! Issue 46, tminus as users install it: `dist/build.sh` packs the debug
//! binary (a release build takes minutes) into the archive the release
//! workflow publishes; unpacked into an empty folder and run with a clean
//! environment it answers `--version`, `man`, `validate suites/` and runs a
//! shipped suite against the embedded reference. `dist/install.sh` and the
//! action's install step fetch it from a local archive server (Python's
//! http.server on 127.0.0.1): a good archive installs, one whose SHA-256 is
//! not the listed one is refused with nothing installed, and a release
//! without an archive for this machine says so and leaves the build to the
//! fallback.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use common::{bin, repo};

/// The archive `dist/build.sh` made from the debug binary, made once per
/// test run in cargo's folder for test scratch (a static's tempdir would
/// never be removed; this one is replaced by the next run).
struct Built {
    out: PathBuf,
    version: String,
    target: String,
}

impl Built {
    fn name(&self) -> String {
        format!("tminus-{}-{}", self.version, self.target)
    }
    fn archive(&self) -> PathBuf {
        self.out.join(format!("{}.tar.gz", self.name()))
    }
}

fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// The host triple, as dist/build.sh reads it (`rustc -vV`).
fn host() -> String {
    let out = Command::new("rustc").arg("-vV").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("spawn")
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dist-archive");
        let _ = std::fs::remove_dir_all(&out);
        let o = run(Command::new("sh")
            .arg(repo().join("dist/build.sh"))
            .arg("--binary")
            .arg(bin())
            .arg("--out")
            .arg(&out));
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        Built {
            out,
            version: version(),
            target: host(),
        }
    })
}

fn sha256_hex(path: &Path) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

fn untar(archive: &Path, into: &Path) {
    let o = run(Command::new("tar")
        .arg("-xzf")
        .arg(archive)
        .arg("-C")
        .arg(into));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Runs the unpacked binary with nothing of this machine's environment: no
/// PATH (so no cargo, no checkout binary), HOME and cwd the empty folder.
fn clean(binary: &Path, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(binary);
    cmd.current_dir(dir)
        .args(args)
        .env_clear()
        .env("PATH", dir.join("no-such-dir"))
        .env("HOME", dir)
        .env("NO_COLOR", "1");
    bounded(&mut cmd)
}

/// Runs `cmd` with its output captured, for at most a minute.
fn bounded(cmd: &mut Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_within(child, Duration::from_secs(60))
}

fn wait_within(child: Child, deadline: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // Only the process this test started.
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("pid {pid} did not finish within {deadline:?}");
        }
    }
}

#[test]
fn the_archive_runs_from_an_empty_folder_on_a_clean_path() {
    let b = built();
    let sums = std::fs::read_to_string(b.out.join("SHA256SUMS")).unwrap();
    assert_eq!(
        sums,
        format!("{}  {}.tar.gz\n", sha256_hex(&b.archive()), b.name()),
        "SHA256SUMS in `sha256sum -c` format"
    );
    let dir = tempfile::tempdir().unwrap();
    untar(&b.archive(), dir.path());
    let top: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(top, [b.name()], "one folder named like the archive");
    let root = dir.path().join(b.name());
    let tminus = root.join("tminus");

    let o = clean(&tminus, &root, &["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("tminus {}", b.version)
    );
    let o = clean(&tminus, &root, &["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let page = std::fs::read(root.join("man/man1/tminus.1")).unwrap();
    assert_eq!(page, o.stdout, "the shipped page is `tminus man`'s");
    let page = String::from_utf8(page).unwrap();
    assert!(
        page.starts_with(".ie") || page.contains(".TH tminus 1"),
        "{}",
        &page[..200]
    );
    assert!(
        page.contains(".SH \"TMINUS RUN OPTIONS\""),
        "the run flags are in the page"
    );
    for (file, shell) in [
        ("tminus.bash", "bash"),
        ("_tminus", "zsh"),
        ("tminus.fish", "fish"),
    ] {
        let shipped = std::fs::read(root.join("completions").join(file)).unwrap();
        let o = clean(&tminus, &root, &["completions", shell]);
        assert_eq!(shipped, o.stdout, "{file}");
        assert!(
            String::from_utf8_lossy(&shipped).contains("report-dir"),
            "{file}"
        );
    }
    assert_eq!(
        std::fs::read(root.join("LICENSE")).unwrap(),
        std::fs::read(repo().join("LICENSE")).unwrap()
    );
    assert!(root.join("README.md").is_file());

    let o = clean(&tminus, &root, &["validate", "suites/"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A shipped suite against the embedded reference, from the archive alone.
    let o = clean(
        &tminus,
        &root,
        &["run", "suites/trace.yaml", "--report-dir", "reports"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(root.join("reports/junit.xml").is_file());
}

/// `[package.metadata.binstall]` in Cargo.toml, rendered for this archive,
/// names the archive and the binary in it, so `cargo binstall tminus` finds
/// what dist/build.sh makes.
#[test]
fn binstalls_templates_name_the_archive_and_its_binary() {
    let b = built();
    let cargo = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let value = |key: &str| -> String {
        let section = &cargo[cargo
            .find("[package.metadata.binstall]")
            .expect("binstall metadata")..];
        section
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key}"))
            .trim_matches('"')
            .to_owned()
    };
    let render = |t: &str| {
        t.replace("{ repo }", "https://github.com/owner/tminus")
            .replace("{ name }", "tminus")
            .replace("{ version }", &b.version)
            .replace("{ target }", &b.target)
            .replace("{ archive-suffix }", ".tar.gz")
            .replace("{ bin }", "tminus")
            .replace("{ binary-ext }", "")
    };
    let url = render(&value("pkg-url"));
    assert_eq!(
        url,
        format!(
            "https://github.com/owner/tminus/releases/download/v{}/{}.tar.gz",
            b.version,
            b.name()
        )
    );
    assert_eq!(value("pkg-fmt"), "tgz");
    let dir = tempfile::tempdir().unwrap();
    untar(&b.archive(), dir.path());
    assert!(dir.path().join(render(&value("bin-dir"))).is_file());
    assert!(cargo.contains("repository = \"https://github.com/owner/tminus\""));
}

#[test]
fn build_refuses_a_binary_of_another_version() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(Command::new("sh")
        .arg(repo().join("dist/build.sh"))
        .args(["--version", "9.9.9", "--binary"])
        .arg(bin())
        .arg("--out")
        .arg(dir.path()));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not `tminus 9.9.9`"), "{}", text(&o));
    assert!(!dir.path().join("SHA256SUMS").exists());
}

/// `python3 -m http.server` on 127.0.0.1:0 over a folder.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(root: &Path) -> Server {
    let mut child = Command::new("python3")
        .args([
            "-u",
            "-m",
            "http.server",
            "0",
            "--bind",
            "127.0.0.1",
            "--directory",
        ])
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 (required: .ci/run installs it)");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
    let port = line
        .split_whitespace()
        .skip_while(|w| *w != "port")
        .nth(1)
        .unwrap_or_else(|| panic!("http.server said `{line}`"))
        .to_owned();
    Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// Release folders as a mirror would hold them: `good/` (the archive and its
/// sums), `tampered/` (the archive with one byte changed, the original
/// sums), `other/` (sums for another machine only), `absent/` (nothing).
fn releases() -> (tempfile::TempDir, Server) {
    let b = built();
    let dir = tempfile::tempdir().unwrap();
    let name = format!("{}.tar.gz", b.name());
    let sums = std::fs::read(b.out.join("SHA256SUMS")).unwrap();
    for f in ["good", "tampered", "other", "absent"] {
        std::fs::create_dir(dir.path().join(f)).unwrap();
    }
    std::fs::copy(b.archive(), dir.path().join("good").join(&name)).unwrap();
    std::fs::write(dir.path().join("good/SHA256SUMS"), &sums).unwrap();
    let mut bytes = std::fs::read(b.archive()).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(dir.path().join("tampered").join(&name), bytes).unwrap();
    std::fs::write(dir.path().join("tampered/SHA256SUMS"), &sums).unwrap();
    let other = String::from_utf8(sums)
        .unwrap()
        .replace(&b.target, "riscv64gc-unknown-linux-gnu");
    std::fs::write(dir.path().join("other/SHA256SUMS"), other).unwrap();
    let server = serve(dir.path());
    (dir, server)
}

fn install(base: &str, dest: &Path) -> Output {
    bounded(
        Command::new("sh")
            .arg(repo().join("dist/install.sh"))
            .args(["--version", &version(), "--base-url", base, "--dest"])
            .arg(dest),
    )
}

#[test]
fn install_checks_the_archive_against_sha256sums() {
    let (_dir, server) = releases();
    let dest = tempfile::tempdir().unwrap();
    let installed = dest.path().join("bin/tminus");

    let o = install(&format!("{}/tampered", server.url), dest.path());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("refused") && text(&o).contains("SHA-256"),
        "{}",
        text(&o)
    );
    assert!(
        !installed.exists(),
        "nothing is installed from a changed archive"
    );

    for folder in ["absent", "other"] {
        let o = install(&format!("{}/{folder}", server.url), dest.path());
        assert_eq!(o.status.code(), Some(3), "{folder}: {}", text(&o));
        assert!(text(&o).contains("build from source"), "{}", text(&o));
        assert!(!installed.exists());
    }

    let o = install(&format!("{}/good", server.url), dest.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        Path::new(said.trim()),
        installed.canonicalize().unwrap(),
        "prints the binary's path"
    );
    let o = clean(&installed, dest.path(), &["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("tminus {}", version())
    );
    assert!(dest.path().join("share/man/man1/tminus.1").is_file());
}

/// The `run:` script of action.yml's step with this id.
fn action_step(id: &str) -> String {
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    let a: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    a["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .and_then(|s| s["run"].as_str())
        .unwrap_or_else(|| panic!("no step {id}"))
        .to_owned()
}

/// action.yml's install step itself, run by bash as the runner runs it
/// (`bash -e -o pipefail`), against the local mirror: the outputs it writes
/// decide between the downloaded binary, a build, and a failed job.
#[test]
fn the_actions_install_step_downloads_refuses_or_falls_back() {
    let (_dir, server) = releases();
    let script = action_step("install");
    let step = |base: &str, version: &str, action_ref: &str| {
        let temp = tempfile::tempdir().unwrap();
        let output = temp.path().join("output");
        std::fs::write(&output, "").unwrap();
        let o = bounded(
            Command::new("bash")
                .args([
                    "--noprofile",
                    "--norc",
                    "-e",
                    "-o",
                    "pipefail",
                    "-c",
                    &script,
                ])
                .env("ACTION_PATH", repo())
                .env("ACTION_REF", action_ref)
                .env("ACTION_REPO", "owner/tminus")
                .env("INPUT_VERSION", version)
                .env("RUNNER_TEMP", temp.path())
                .env("GITHUB_OUTPUT", &output)
                .env("TMINUS_RELEASE_BASE_URL", format!("{}/{base}", server.url)),
        );
        let outputs = std::fs::read_to_string(&output).unwrap();
        (o, outputs, temp)
    };
    let v = version();
    // Pinned to the release's tag: downloaded, path output.
    let (o, out, temp) = step("good", "", &format!("v{v}"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let path = temp.path().join("tminus/bin/tminus");
    assert_eq!(
        out,
        format!("path={}\n", path.canonicalize().unwrap().display())
    );
    // A checksum mismatch fails the step: no build, no binary.
    let (o, out, temp) = step("tampered", &v, "main");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("::error title=tminus install::"),
        "{}",
        text(&o)
    );
    assert_eq!(out, "");
    assert!(!temp.path().join("tminus/bin/tminus").exists());
    // No archive published: the build step is asked for, and says why.
    let (o, out, _) = step("absent", &v, "main");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(out, "build=true\n");
    assert!(text(&o).contains("building from source"), "{}", text(&o));
    // `@v1`, a branch or a SHA names no release: built, nothing downloaded.
    let (o, out, _) = step("good", "", "v1");
    assert_eq!(out, "build=true\n", "{}", text(&o));
}
