//! Real third-party servers for tests (Debian's nginx, `openssl`): found or
//! skipped (required in CI), started on 127.0.0.1 and killed by their pid.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const NGINX: &str = "/usr/sbin/nginx";

/// Whether the real servers are here; panics when CI requires them.
pub fn have_servers() -> bool {
    let ok = Path::new(NGINX).exists() && which("openssl");
    if !ok && std::env::var_os("TMINUS_REQUIRE_REAL_SERVERS").is_some() {
        panic!("nginx and openssl are required (apt-get install nginx openssl)");
    }
    if !ok {
        eprintln!("skipped: nginx or openssl missing (apt-get install nginx openssl)");
    }
    ok
}

pub fn which(bin: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {bin}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A private CA, `ca.pem` and `ca.key` in `dir`, made the usual way
/// (`openssl req -x509`).
pub fn make_ca(dir: &Path, cn: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "30",
            "-subj",
            &format!("/CN={cn}"),
        ],
    );
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real process of ours (nginx or s_server), killed by its pid on drop.
pub struct Server {
    pub child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn wait_listening(ports: &[u16], what: &str, log: &Path) {
    let started = Instant::now();
    for port in ports {
        while std::net::TcpStream::connect(("127.0.0.1", *port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{what} did not listen on {port}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// nginx in the foreground with `servers` (server blocks) in its http block.
pub fn nginx(dir: &Path, servers: &str, ports: &[u16]) -> Server {
    let tmp = dir.join("nginx-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let t = tmp.display();
    let log = dir.join("nginx-error.log");
    let conf = format!(
        "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {log} info;\nevents {{}}\n\
         http {{\n  access_log off;\n  client_body_temp_path {t}; proxy_temp_path {t};\n  \
         fastcgi_temp_path {t}; uwsgi_temp_path {t}; scgi_temp_path {t};\n{servers}\n}}\n",
        d = dir.display(),
        log = log.display(),
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let child = Command::new(NGINX)
        .args(["-c", path.to_str().unwrap(), "-e", log.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nginx");
    let server = Server { child };
    wait_listening(ports, "nginx", &log);
    server
}
