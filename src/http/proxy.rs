//! Forward proxies (issue 25 item 2): which requests go through which proxy.
//!
//! Staging hosts are often reached through a corporate proxy. tminus takes
//! the proxy from `--proxy URL` or a suite's `target.proxy`, else from the
//! environment as curl reads it (`https_proxy`/`HTTPS_PROXY` for https,
//! `http_proxy`/`HTTP_PROXY` for http, `all_proxy`/`ALL_PROXY` for both,
//! lowercase first), and skips it for the hosts of `NO_PROXY`/`no_proxy`
//! (or `--noproxy LIST`). One decision ([`Proxies::for_url`]) serves every
//! client: reqwest's (a custom proxy that asks it) and the connections
//! tminus opens itself ([`super::stream`], tunnelled with `CONNECT`).
//!
//! Like TLS it is set once per process ([`install`]). The proxy's own
//! credentials (its URL's userinfo) go to the proxy only, in
//! `Proxy-Authorization`; a target's credentials never do.

use std::net::IpAddr;
use std::sync::OnceLock;

use reqwest::Url;

/// Where requests go through a proxy, and which hosts bypass it.
#[derive(Debug, Clone, Default)]
pub struct Proxies {
    /// `--proxy` or `target.proxy`: for both schemes.
    explicit: Option<Named>,
    http: Option<Named>,
    https: Option<Named>,
    no_proxy: Vec<NoProxyEntry>,
}

/// A proxy URL and what named it (`--proxy`, `HTTPS_PROXY`, ...).
#[derive(Debug, Clone)]
struct Named {
    url: Url,
    from: String,
}

#[derive(Debug, Clone, PartialEq)]
enum NoProxyEntry {
    All,
    /// A host name: itself and every name under it.
    Domain(String),
    Ip(IpAddr),
    Net(IpAddr, u8),
}

/// Reads a proxy URL: `http://[user:pass@]host:port`. tminus speaks to
/// proxies in plain HTTP (absolute-form requests and `CONNECT`).
pub fn parse_proxy_url(text: &str, from: &str) -> Result<Url, String> {
    let text = text.trim();
    let with_scheme = if text.contains("://") {
        text.to_owned()
    } else {
        // curl's habit: `proxy.corp:3128` means http.
        format!("http://{text}")
    };
    let shown = crate::redact::mask_userinfo(&with_scheme);
    let url =
        Url::parse(&with_scheme).map_err(|e| format!("{from} `{shown}` is not a URL: {e}"))?;
    if url.scheme() != "http" {
        return Err(format!(
            "{from} `{shown}`: tminus reaches proxies over http:// (CONNECT for https targets), not {}://",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{from} `{shown}` names no host"));
    }
    Ok(url)
}

impl Proxies {
    /// The environment's proxies (`get` reads a variable).
    pub fn from_env(get: &dyn Fn(&str) -> Option<String>) -> Result<Proxies, String> {
        let var = |names: [&str; 2]| {
            names.iter().find_map(|n| {
                get(n)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (n.to_string(), v))
            })
        };
        let named = |names: [&str; 2]| -> Result<Option<Named>, String> {
            var(names)
                .map(|(from, v)| parse_proxy_url(&v, &from).map(|url| Named { url, from }))
                .transpose()
        };
        let all = named(["all_proxy", "ALL_PROXY"])?;
        let http = named(["http_proxy", "HTTP_PROXY"])?.or_else(|| all.clone());
        let https = named(["https_proxy", "HTTPS_PROXY"])?.or(all);
        let no_proxy = var(["no_proxy", "NO_PROXY"])
            .map(|(_, v)| parse_no_proxy(&v))
            .unwrap_or_default();
        Ok(Proxies {
            explicit: None,
            http,
            https,
            no_proxy,
        })
    }

    /// `--proxy` or `target.proxy`, over the environment's for both schemes.
    pub fn with_explicit(mut self, url: Url, from: &str) -> Proxies {
        self.explicit = Some(Named {
            url,
            from: from.to_owned(),
        });
        self
    }

    /// `--noproxy LIST`, in place of the environment's `NO_PROXY`.
    pub fn with_no_proxy(mut self, list: &str) -> Proxies {
        self.no_proxy = parse_no_proxy(list);
        self
    }

    /// Whether any request can go through a proxy.
    pub fn is_empty(&self) -> bool {
        self.explicit.is_none() && self.http.is_none() && self.https.is_none()
    }

    /// The proxy URLs (with their userinfo: register them with the redactor).
    pub fn urls(&self) -> Vec<&Url> {
        [&self.explicit, &self.http, &self.https]
            .into_iter()
            .flatten()
            .map(|n| &n.url)
            .collect()
    }

    /// The proxy `url` goes through, if any.
    pub fn for_url(&self, url: &Url) -> Option<&Url> {
        let host = url.host_str()?;
        let port = url.port_or_known_default()?;
        self.for_origin(url.scheme() == "https", host, port)
    }

    /// The proxy a connection to `host:port` goes through, if any.
    pub fn for_origin(&self, tls: bool, host: &str, port: u16) -> Option<&Url> {
        let chosen = self.explicit.as_ref().or(if tls {
            self.https.as_ref()
        } else {
            self.http.as_ref()
        })?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if self.no_proxy.iter().any(|e| e.matches(host, port)) {
            return None;
        }
        // An environment proxy is for leaving the machine: this machine's
        // own addresses are reached directly (as Go's net/http does), so a
        // corporate `HTTPS_PROXY` does not swallow the embedded reference.
        // An explicit proxy is used for them too.
        if self.explicit.is_none() && is_local(host) {
            return None;
        }
        Some(&chosen.url)
    }

    /// What named the proxy `url` goes through (`HTTPS_PROXY`, `--proxy`).
    pub fn source_for(&self, url: &Url) -> Option<&str> {
        let proxy = self.for_url(url)?;
        [&self.explicit, &self.http, &self.https]
            .into_iter()
            .flatten()
            .find(|n| &n.url == proxy)
            .map(|n| n.from.as_str())
    }
}

fn is_local(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `NO_PROXY` as curl reads it: comma- (or space-) separated host names
/// (each also covering the names under it, a leading `.` or `*.` optional),
/// IP addresses, CIDR ranges, and `*` for every host. A `:port` is ignored.
fn parse_no_proxy(list: &str) -> Vec<NoProxyEntry> {
    list.split([',', ' '])
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| {
            if e == "*" {
                return NoProxyEntry::All;
            }
            if let Some((net, bits)) = e.split_once('/') {
                if let (Ok(ip), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u8>()) {
                    return NoProxyEntry::Net(ip, bits);
                }
            }
            let bare = e.trim_start_matches('[');
            if let Some(v6) = bare.split_once(']').map(|(h, _)| h) {
                if let Ok(ip) = v6.parse() {
                    return NoProxyEntry::Ip(ip);
                }
            }
            if let Ok(ip) = e.parse() {
                return NoProxyEntry::Ip(ip);
            }
            let host = e.rsplit_once(':').map_or(e, |(h, p)| {
                if p.chars().all(|c| c.is_ascii_digit()) {
                    h
                } else {
                    e
                }
            });
            if let Ok(ip) = host.parse() {
                return NoProxyEntry::Ip(ip);
            }
            NoProxyEntry::Domain(
                host.trim_start_matches('*')
                    .trim_start_matches('.')
                    .to_ascii_lowercase(),
            )
        })
        .collect()
}

impl NoProxyEntry {
    fn matches(&self, host: &str, _port: u16) -> bool {
        match self {
            NoProxyEntry::All => true,
            NoProxyEntry::Domain(d) => {
                let h = host.to_ascii_lowercase();
                h == *d || h.strip_suffix(d.as_str()).is_some_and(|p| p.ends_with('.'))
            }
            NoProxyEntry::Ip(ip) => host.parse::<IpAddr>().is_ok_and(|h| h == *ip),
            NoProxyEntry::Net(net, bits) => host
                .parse::<IpAddr>()
                .is_ok_and(|h| in_network(h, *net, *bits)),
        }
    }
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// The `Proxy-Authorization` value of a proxy URL's userinfo, if it has one.
pub fn basic_auth(proxy: &Url) -> Option<String> {
    use base64::Engine as _;
    if proxy.username().is_empty() && proxy.password().is_none() {
        return None;
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let pair = format!(
        "{}:{}",
        decode(proxy.username()),
        decode(proxy.password().unwrap_or(""))
    );
    Some(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    ))
}

/// The proxy's address as messages show it (no userinfo).
pub fn shown(proxy: &Url) -> String {
    format!(
        "{}:{}",
        proxy.host_str().unwrap_or(""),
        proxy.port_or_known_default().unwrap_or(80)
    )
}

static INSTALLED: OnceLock<Proxies> = OnceLock::new();

/// Sets the proxies of every client built after it, once per process.
pub fn install(p: Proxies) -> Result<(), String> {
    INSTALLED
        .set(p)
        .map_err(|_| "the proxies were already set".to_owned())
}

/// The installed proxies (none installed: no proxy at all).
pub fn installed() -> Option<&'static Proxies> {
    INSTALLED.get().filter(|p| !p.is_empty())
}

/// The installed proxy `url` goes through, if any.
pub fn installed_for(url: &str) -> Option<&'static Url> {
    let url = Url::parse(url).ok()?;
    installed()?.for_url(&url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Proxies {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Proxies::from_env(&|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())).unwrap()
    }

    fn via(p: &Proxies, url: &str) -> Option<String> {
        p.for_url(&url.parse().unwrap()).map(shown)
    }

    #[test]
    fn each_scheme_takes_its_variable_and_all_proxy_fills_in() {
        let p = env(&[
            ("HTTPS_PROXY", "http://s.corp:3128"),
            ("all_proxy", "a.corp:8080"),
        ]);
        assert_eq!(
            via(&p, "https://api.example/x").as_deref(),
            Some("s.corp:3128")
        );
        assert_eq!(
            via(&p, "http://api.example/x").as_deref(),
            Some("a.corp:8080")
        );
        // Lowercase first, as curl.
        let p = env(&[
            ("https_proxy", "http://low:1"),
            ("HTTPS_PROXY", "http://UP:2"),
        ]);
        assert_eq!(via(&p, "https://h/").as_deref(), Some("low:1"));
        assert!(env(&[]).is_empty());
    }

    #[test]
    fn no_proxy_names_hosts_domains_addresses_and_ranges() {
        let p = env(&[
            ("HTTP_PROXY", "http://p:1"),
            (
                "NO_PROXY",
                "localhost, .internal.example,10.0.0.0/8,::1,192.168.1.7:8080",
            ),
        ]);
        for bypassed in [
            "http://localhost:9/",
            "http://api.internal.example/",
            "http://internal.example/",
            "http://10.20.30.40/",
            "http://[::1]:8/",
            "http://192.168.1.7/",
        ] {
            assert_eq!(via(&p, bypassed), None, "{bypassed}");
        }
        for proxied in ["http://notinternal.example/", "http://11.0.0.1/"] {
            assert!(via(&p, proxied).is_some(), "{proxied}");
        }
        // This machine is reached directly past an environment proxy, and
        // through an explicit one.
        assert_eq!(via(&p, "http://127.0.0.1:9/"), None);
        let p = p.with_explicit(parse_proxy_url("http://x:2", "--proxy").unwrap(), "--proxy");
        assert!(via(&p, "http://127.0.0.1:9/").is_some());
        let p = env(&[("HTTP_PROXY", "http://p:1"), ("no_proxy", "*")]);
        assert_eq!(via(&p, "http://anything/"), None);
    }

    #[test]
    fn the_explicit_proxy_wins_and_no_proxy_still_applies() {
        let p = env(&[
            ("HTTPS_PROXY", "http://env:1"),
            ("NO_PROXY", "skip.example"),
        ])
        .with_explicit(
            parse_proxy_url("http://cli:2", "--proxy").unwrap(),
            "--proxy",
        );
        assert_eq!(via(&p, "https://h/").as_deref(), Some("cli:2"));
        assert_eq!(via(&p, "http://h/").as_deref(), Some("cli:2"));
        assert_eq!(via(&p, "https://skip.example/"), None);
        assert_eq!(
            p.source_for(&"https://h/".parse().unwrap()),
            Some("--proxy")
        );
        let p = p.with_no_proxy("h");
        assert_eq!(via(&p, "https://h/"), None);
        assert!(via(&p, "https://skip.example/").is_some());
    }

    #[test]
    fn bad_proxy_urls_name_their_source_and_hide_credentials() {
        let e =
            Proxies::from_env(&|k| (k == "HTTPS_PROXY").then(|| "socks5://u:hunter2@p:1".into()))
                .unwrap_err();
        assert!(e.contains("HTTPS_PROXY") && e.contains("socks5"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let auth = basic_auth(&parse_proxy_url("http://us%40er:p%3Ass@p:1", "x").unwrap());
        // base64("us@er:p:ss")
        assert_eq!(auth.as_deref(), Some("Basic dXNAZXI6cDpzcw=="));
        assert_eq!(basic_auth(&parse_proxy_url("p:1", "x").unwrap()), None);
    }
}
