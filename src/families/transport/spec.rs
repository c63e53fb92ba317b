//! YAML specs of the transport-security kinds (`transport.*`): the seed's
//! third launch mistake, weak transport security ("TLS 1.2/1.3 only, HSTS,
//! a narrow CORS list, mTLS for critical integrations"), judged by the RFCs
//! that define each property (RFC 8996, RFC 9325, RFC 6797, the Fetch
//! standard's CORS protocol, RFC 5280). Every threshold is a parameter.

use crate::model::scalar::StatusSet;
use crate::spec::kinds::{
    check_spec, family_kinds, must, param, should, DefaultValue as D, Kind, Param, Property,
};
use crate::spec::request::RequestSpec;

/// Every default of the family: serde applies these, `KINDS` prints them.
pub mod defaults {
    use crate::model::scalar::StatusPattern::{self, Exact};
    /// Days a certificate must still be valid (two weeks: the last window in
    /// which a failed renewal can still be fixed before it breaks clients).
    pub const MIN_DAYS: u64 = 14;
    /// CA/Browser Forum Baseline Requirements §6.1.5.
    pub const MIN_RSA_BITS: u64 = 2048;
    pub const MIN_EC_BITS: u64 = 256;
    /// Six months, the OWASP HSTS cheat sheet's and Mozilla's minimum.
    pub const MIN_MAX_AGE: u64 = 15_768_000;
    pub const LEGACY_PROBE: bool = true;
    /// An origin no deployment allows (`.example` is reserved, RFC 2606).
    pub const HOSTILE_ORIGIN: &str = "https://tminus-hostile.example";
    pub const PREFLIGHT: bool = true;
    /// Answers that refuse a client without a certificate at the HTTP level
    /// (nginx answers 400 "No required SSL certificate was sent", others 495/496).
    pub const REFUSED_STATUS: &[StatusPattern] = &[
        Exact(400),
        Exact(401),
        Exact(403),
        Exact(421),
        Exact(495),
        Exact(496),
    ];
    /// Answers to plain http that refuse it rather than serve it: nginx's
    /// 400 "The plain HTTP request was sent to HTTPS port", 403, 421
    /// Misdirected Request, 426 Upgrade Required (RFC 9110 §15.5.22).
    pub const PLAIN_REFUSED_STATUS: &[StatusPattern] =
        &[Exact(400), Exact(403), Exact(421), Exact(426)];
}

use defaults as d;

fn min_days() -> u64 {
    d::MIN_DAYS
}
fn min_rsa_bits() -> u64 {
    d::MIN_RSA_BITS
}
fn min_ec_bits() -> u64 {
    d::MIN_EC_BITS
}
fn min_max_age() -> u64 {
    d::MIN_MAX_AGE
}
fn legacy_probe() -> bool {
    d::LEGACY_PROBE
}
fn hostile_origin() -> String {
    d::HOSTILE_ORIGIN.into()
}
fn preflight() -> bool {
    d::PREFLIGHT
}
fn refused_status() -> StatusSet {
    StatusSet(d::REFUSED_STATUS.to_vec())
}

check_spec!(
    /// `transport.certificate`: the server's chain is trusted for the host,
    /// far from expiry, with a strong key.
    TransportCertificateSpec {
        #[serde(default = "min_days")]
        pub min_days: u64,
        #[serde(default = "min_rsa_bits")]
        pub min_rsa_bits: u64,
        #[serde(default = "min_ec_bits")]
        pub min_ec_bits: u64,
    }
);

check_spec!(
    /// `transport.protocol`: TLS 1.2 or later is negotiated; TLS 1.0 and 1.1
    /// are refused.
    TransportProtocolSpec {
        /// Send hand-built TLS 1.0 and 1.1 ClientHellos and judge the answers.
        #[serde(default = "legacy_probe")]
        pub legacy_probe: bool,
    }
);

check_spec!(
    /// `transport.hsts`: https answers carry Strict-Transport-Security with a
    /// long max-age.
    TransportHstsSpec {
        pub request: RequestSpec,
        #[serde(default = "min_max_age")]
        pub min_max_age: u64,
    }
);

check_spec!(
    /// `transport.cors`: a hostile Origin is not granted, never with
    /// credentials.
    TransportCorsSpec {
        pub request: RequestSpec,
        #[serde(default = "hostile_origin")]
        pub hostile_origin: String,
        /// An origin that must be granted (your web app's), if you have one.
        #[serde(default)]
        pub allowed_origin: Option<String>,
        /// Also send a preflight (`OPTIONS` with Access-Control-Request-Method).
        #[serde(default = "preflight")]
        pub preflight: bool,
    }
);

check_spec!(
    /// `transport.https_redirect`: plain http is redirected to https or
    /// refused, never served.
    TransportHttpsRedirectSpec {
        /// The path asked for over plain http.
        #[serde(default = "root_path")]
        pub path: String,
        /// The plain-http URL to try (default: the target's, `http://`, on
        /// port 80 when the target is on 443, else on the target's port).
        #[serde(default)]
        pub http_url: Option<String>,
        /// Plain-http answers that count as refusing it.
        #[serde(default = "plain_refused_status")]
        pub refused_status: StatusSet,
    }
);

fn root_path() -> String {
    "/".into()
}
fn plain_refused_status() -> StatusSet {
    StatusSet(d::PLAIN_REFUSED_STATUS.to_vec())
}

check_spec!(
    /// `transport.mtls_required`: a connection without a client certificate
    /// is refused, one with the configured certificate is served.
    TransportMtlsSpec {
        pub request: RequestSpec,
        /// HTTP answers that count as a refusal (a server that finishes the
        /// handshake and refuses in HTTP).
        #[serde(default = "refused_status")]
        pub refused_status: StatusSet,
    }
);

family_kinds!(
    /// A `transport.*` check as written.
    TransportSpec {
        "transport.certificate" => Certificate(TransportCertificateSpec),
        "transport.protocol" => Protocol(TransportProtocolSpec),
        "transport.hsts" => Hsts(TransportHstsSpec),
        "transport.cors" => Cors(TransportCorsSpec),
        "transport.mtls_required" => MtlsRequired(TransportMtlsSpec),
        "transport.https_redirect" => HttpsRedirect(TransportHttpsRedirectSpec),
    }
);

const REQUEST: Param = param("request", D::Required, "the request sent");

const HTTPS: Property = must(
    "https",
    "RFC 9110 §4.2.2; BOTIX launch mistake 3 (weak transport security)",
    "the target is served over https (an http:// target fails it; the rest is skipped)",
);

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the transport family.
pub const KINDS: &[Kind] = &[
    Kind {
        properties: &[
            HTTPS,
            must("trusted", "RFC 5280 §6; RFC 6125 §6 (a chain to a trusted root, naming the host)", "the chain verifies against the platform's roots (and --cacert) for the target's host"),
            must("not_expiring", "RFC 5280 §4.1.2.5 (notAfter); operational: renew before the last two weeks", "the server certificate is valid for at least min_days more days"),
            should("key_strength", "CA/Browser Forum Baseline Requirements §6.1.5; NIST SP 800-57 Part 1", "RSA keys have at least min_rsa_bits bits, EC keys at least min_ec_bits, Ed25519/Ed448 pass"),
        ],
        name: "transport.certificate",
        summary: "the server's certificate is trusted for the host, valid for at least 14 more days, with a strong key",
        params: &[
            param("min_days", D::Int(d::MIN_DAYS), "days the certificate must still be valid"),
            param("min_rsa_bits", D::Int(d::MIN_RSA_BITS), "smallest RSA key accepted"),
            param("min_ec_bits", D::Int(d::MIN_EC_BITS), "smallest EC key accepted"),
        ],
    },
    Kind {
        properties: &[
            HTTPS,
            must("modern", "RFC 9325 §3.1.1 (TLS 1.2 MUST be supported); BOTIX (TLS 1.2/1.3 only)", "the version negotiated with a modern client is TLS 1.2 or 1.3"),
            should("tls13", "RFC 9325 §3.1.1 (TLS 1.3 SHOULD be supported)", "TLS 1.3 is negotiated"),
            must("no_tls10", "RFC 8996 §2 (TLS 1.0 MUST NOT be negotiated)", "a TLS 1.0 ClientHello is refused: a protocol_version alert or a ServerHello for a higher version (handshake_failure or a close decides nothing: asked again, else an error)"),
            must("no_tls11", "RFC 8996 §3 (TLS 1.1 MUST NOT be negotiated)", "a TLS 1.1 ClientHello is refused (as no_tls10)"),
        ],
        name: "transport.protocol",
        summary: "TLS 1.2 or 1.3 is negotiated, and TLS 1.0 and 1.1 ClientHellos offering every suite of their version are refused (RFC 8996)",
        params: &[param(
            "legacy_probe",
            D::Bool(d::LEGACY_PROBE),
            "send TLS 1.0 and 1.1 ClientHellos; `false` skips no_tls10 and no_tls11",
        )],
    },
    Kind {
        properties: &[
            HTTPS,
            should("present", "RFC 6797 §6.1, §7.1; BOTIX launch mistake 3 (HSTS)", "the https answer carries Strict-Transport-Security").botix_must(),
            must("well_formed", "RFC 6797 §6.1 (one max-age, no directive twice)", "the header parses: exactly one max-age with a number, no repeated directive"),
            should("max_age", "RFC 6797 §11.2; OWASP HSTS cheat sheet (at least six months)", "max-age is at least min_max_age seconds").botix_must(),
            should("include_subdomains", "RFC 6797 §6.1.2, §14.4", "includeSubDomains is set, so no subdomain is reachable over http"),
        ],
        name: "transport.hsts",
        summary: "https answers carry Strict-Transport-Security with max-age of at least six months (RFC 6797)",
        params: &[
            REQUEST,
            param("min_max_age", D::Int(d::MIN_MAX_AGE), "smallest max-age accepted, in seconds"),
        ],
    },
    Kind {
        properties: &[
            must("no_credentialed_reflection", "Fetch Standard §3.2.5 (CORS protocol and credentials); OWASP WSTG-CLNT-07", "no hostile Origin (hostile_origin, `null`, look-alikes of the allowed origin) is granted together with Access-Control-Allow-Credentials: true (any site could read a user's answers)"),
            must("no_wildcard_with_credentials", "Fetch Standard §3.2.5 (`*` is not valid with credentials)", "Access-Control-Allow-Origin: * is never sent with Access-Control-Allow-Credentials: true"),
            should("narrow", "BOTIX launch mistake 3 (a narrow CORS list); Fetch Standard §3.2.5", "no hostile Origin is granted at all: not reflected, no `*`").botix_must(),
            must("allowed_granted", "Fetch Standard §3.2.5", "with allowed_origin: that origin is granted (else skipped)"),
        ],
        name: "transport.cors",
        summary: "hostile Origins (hostile_origin, `null`, look-alikes of the allowed one) are not granted by CORS, never with credentials, on the request and its preflight",
        params: &[
            REQUEST,
            param("hostile_origin", D::Str(d::HOSTILE_ORIGIN), "the Origin no deployment allows"),
            param("allowed_origin", D::Absent, "an origin that must be granted (your web app's)"),
            param("preflight", D::Bool(d::PREFLIGHT), "also send the preflight OPTIONS"),
        ],
    },
    Kind {
        properties: &[
            HTTPS,
            must("refused_without", "BOTIX launch mistake 3 (mTLS for critical integrations); RFC 8446 §4.3.2", "a connection that shows no client certificate gets no answer but a TLS refusal or a refused_status"),
            must("accepted_with", "RFC 8446 §4.4.2", "with the configured client certificate (--cert/--key) the same request is served (not a refusal)"),
        ],
        name: "transport.mtls_required",
        summary: "a connection without a client certificate is refused, one with the configured certificate served",
        params: &[
            REQUEST,
            param(
                "refused_status",
                D::Statuses(d::REFUSED_STATUS),
                "HTTP answers that count as refusing a client without a certificate",
            ),
        ],
    },
    Kind {
        properties: &[
            HTTPS,
            must("not_served", "RFC 6797 §7.2 (an HSTS host does not serve over http); BOTIX launch mistake 3", "plain http gets no API answer: a redirect to https, or a refusal (nothing listening, the connection closed, bytes that are not HTTP, one of refused_status); any other answer (a 2xx, a 401, a 404 from the API) is served"),
            should("redirect", "RFC 6797 §7.2 (SHOULD answer with a permanent redirect to https)", "an HTTP answer over plain http is a permanent redirect (301 or 308) to an https URL (skipped when nothing answers plain http)"),
        ],
        name: "transport.https_redirect",
        summary: "plain http is redirected to https or refused, never served (RFC 6797 §7.2); sent without the suite's credentials",
        params: &[
            param("path", D::Str("/"), "the path asked for over plain http (the root is asked too)"),
            param("http_url", D::Absent, "the plain-http origin to try, `path` joined after its own path; takes ${env.X} (default: the target's host over http, port 80 when the target is on 443, else its port)"),
            param("refused_status", D::Statuses(d::PLAIN_REFUSED_STATUS), "plain-http answers that count as refusing it"),
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::KINDS;
    use crate::families::transport::plan::TransportPlan;
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;

    const MINIMAL: &[(&str, &str)] = &[
        ("transport.certificate", ""),
        ("transport.protocol", ""),
        ("transport.hsts", "    request: { path: /a }\n"),
        ("transport.cors", "    request: { path: /a }\n"),
        ("transport.mtls_required", "    request: { path: /a }\n"),
        ("transport.https_redirect", ""),
    ];

    #[test]
    fn table_defaults_are_the_planned_ones() {
        let names: Vec<&str> = MINIMAL.iter().map(|(k, _)| *k).collect();
        assert_covers(KINDS, &names);
        for (kind, body) in MINIMAL {
            let CheckPlan::Transport(p) = plan_check(kind, body) else {
                panic!("not a transport plan");
            };
            let planned = match *p {
                TransportPlan::Certificate(c) => vec![
                    ("min_days", int(c.min_days)),
                    ("min_rsa_bits", int(c.min_rsa_bits)),
                    ("min_ec_bits", int(c.min_ec_bits)),
                ],
                TransportPlan::Protocol(p) => vec![("legacy_probe", word(p.legacy_probe))],
                TransportPlan::Hsts(h) => vec![("min_max_age", int(h.min_max_age))],
                TransportPlan::Cors(c) => vec![
                    ("hostile_origin", word(&c.hostile_origin)),
                    ("allowed_origin", None),
                    ("preflight", word(c.preflight)),
                ],
                TransportPlan::MtlsRequired(m) => {
                    vec![("refused_status", statuses(&m.refused_status))]
                }
                TransportPlan::HttpsRedirect(r) => {
                    vec![
                        ("path", word(&r.path)),
                        ("http_url", None),
                        ("refused_status", statuses(&r.refused_status)),
                    ]
                }
            };
            assert_planned(KINDS, kind, &planned);
        }
    }
}
