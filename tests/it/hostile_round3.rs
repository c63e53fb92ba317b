//! Hostile round 3 (issue 44), class 1: redaction closed under composition.
//! A secret sent in a JSON body and reflected by the target reaches
//! report.json escaped twice; the redactor must mask every chain of the
//! encodings tminus applies (to depth 3) and any piece of one at a cut.
//!
//! The property test draws secrets from every special character class and
//! pushes each through a random chain of encodings, cut at a random level
//! (after the cut only the reports' own escapes follow, as in tminus), and
//! embedded in text; the masked text must be exactly the text around the
//! mask. Deterministic: case `i` uses seed `BASE_SEED + i`, printed on
//! failure; `TMINUS_REDACT_CASES` (default 120; a case costs about 60 ms in a debug build, most of it compiling the secret's forms) and `TMINUS_REDACT_SEED`
//! replay.

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use base64::Engine;
use common::{stderr, stdout, tminus, RefHandle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tminus::model::text::{markdown_code, markdown_text, percent_encode};
use tminus::redact::{quote, Redactor, MASK};
use tminus::report::html::escape as html;

const BASE_SEED: u64 = 0x5ec2_e7ed;

/// One encoding as an output path (or a target) applies it, written here
/// from the outputs' own functions or the standard ones, not from the
/// redactor's list.
type Enc = (&'static str, fn(&str) -> String);

fn json(s: &str) -> String {
    let j = serde_json::to_string(s).unwrap();
    j[1..j.len() - 1].to_owned()
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// What the reports do to text that may already hold a cut (`…` is kept).
const REPORT_ESCAPES: &[Enc] = &[
    ("json", json),
    ("html", html),
    ("xml", xml),
    ("markdown", markdown_text),
    ("escape_debug", quote),
    ("debug", |s| {
        let d = format!("{s:?}");
        d[1..d.len() - 1].to_owned()
    }),
    ("markdown-code", |s| {
        let c = markdown_code(s);
        c[1..c.len() - 1].to_owned()
    }),
];

/// What a target (or tminus before a report) may do besides.
const OTHER_ENCODINGS: &[Enc] = &[
    ("percent", |s| percent_encode(s, false, true)),
    ("percent-plus-lower", |s| percent_encode(s, true, false)),
    ("base64", |s| {
        base64::engine::general_purpose::STANDARD.encode(s)
    }),
    ("base64url-nopad", |s| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
    }),
    ("hex", |s| hex::encode(s)),
    ("json-ascii", |s| {
        json(s)
            .chars()
            .map(|c| {
                if c.is_ascii() {
                    c.to_string()
                } else {
                    let mut b = [0u16; 2];
                    c.encode_utf16(&mut b)
                        .iter()
                        .map(|u| format!("\\u{u:04x}"))
                        .collect()
                }
            })
            .collect()
    }),
];

/// Characters of every class a secret may hold: letters, digits, the JSON
/// and Debug escapes, markup, URL and Markdown specials, space, controls,
/// non-ASCII (two-, three- and four-byte).
const CLASSES: &[&str] = &[
    "abcXYZ",
    "0189",
    "\"\\",
    "<>&'",
    "%+/=?#",
    "`*_|[]!~",
    " ",
    "\t\n\u{1b}\u{7f}",
    "üß",
    "ключ€",
    "😀𝄞",
];

fn secret(rng: &mut StdRng) -> String {
    // Starts with letters so the text before it cannot be read as part of it.
    let mut s = String::from("Qz");
    let len = rng.random_range(8..24);
    for _ in 0..len {
        let class: Vec<char> = CLASSES[rng.random_range(0..CLASSES.len())]
            .chars()
            .collect();
        s.push(class[rng.random_range(0..class.len())]);
    }
    s.push('k');
    s
}

/// Whether any encoding in the chain is a byte encoding (at most one is,
/// as tminus never applies two).
fn is_byte(name: &str) -> bool {
    name.starts_with("base64") || name == "hex"
}

/// Issue 44: a random secret, a random chain of up to three encodings (cut
/// at a random level, ellipsis on either side), embedded in text, is masked
/// and nothing else is touched.
#[test]
fn any_chain_of_encodings_and_any_cut_is_masked() {
    let cases: u64 = std::env::var("TMINUS_REDACT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let seeds: Vec<u64> = match std::env::var("TMINUS_REDACT_SEED") {
        Ok(s) => vec![s.parse().expect("TMINUS_REDACT_SEED")],
        Err(_) => (0..cases).map(|i| BASE_SEED + i).collect(),
    };
    let mut deepest = 0;
    for seed in seeds {
        let mut rng = StdRng::seed_from_u64(seed);
        let s = secret(&mut rng);
        let r = Redactor::new();
        r.add(&s);
        let depth = rng.random_range(1..=3);
        // The level after which the text is cut (depth + 1: not cut).
        let cut_at = rng.random_range(0..=depth + 1);
        let head_cut = rng.random_bool(0.5);
        let mut text = s.clone();
        let mut chain = Vec::new();
        let mut used_byte = false;
        let mut cut = false;
        for level in 0..depth {
            if level == cut_at {
                text = cut_text(&text, head_cut, &mut rng);
                cut = true;
            }
            let pool: Vec<&Enc> = if cut {
                REPORT_ESCAPES.iter().collect()
            } else {
                REPORT_ESCAPES
                    .iter()
                    .chain(
                        OTHER_ENCODINGS
                            .iter()
                            .filter(|(n, _)| !(used_byte && is_byte(n))),
                    )
                    .collect()
            };
            let (name, enc) = pool[rng.random_range(0..pool.len())];
            used_byte |= is_byte(name);
            chain.push(*name);
            text = enc(&text);
        }
        if cut_at == depth {
            text = cut_text(&text, head_cut, &mut rng);
            cut = true;
        }
        deepest = deepest.max(chain.len());
        let (pre, post) = ("echo: ", " end");
        // Two masks side by side (a whole form, and a piece before it at a
        // cut) hide as much as one.
        let twice = format!("{MASK}{MASK}");
        let mut got = r.redact(&format!("{pre}{text}{post}"));
        while got.contains(&twice) {
            got = got.replace(&twice, MASK);
        }
        let what = format!("seed {seed}: secret {s:?} through {chain:?} (cut: {cut}) = {text:?}");
        if !cut {
            assert_eq!(got, format!("{pre}{MASK}{post}"), "{what}");
            continue;
        }
        // A piece of 8 characters or more is masked; a shorter one is kept.
        let piece = text.trim_start_matches('…').trim_end_matches('…');
        if piece.chars().count() >= tminus::redact::MIN_CUT_PIECE {
            let want = if text.starts_with('…') {
                format!("{pre}…{MASK}{post}")
            } else {
                format!("{pre}{MASK}…{post}")
            };
            assert_eq!(got, want, "{what}");
        }
    }
    assert_eq!(deepest, 3, "no case reached three levels");
}

/// `text` cut as an excerpt cuts it: a head with `…` after it, or `…` and
/// a tail; at least one character kept and one dropped.
fn cut_text(text: &str, head: bool, rng: &mut StdRng) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() < 2 {
        return text.to_owned();
    }
    let at = rng.random_range(1..chars.len());
    if head {
        format!("{}…", chars[..at].iter().collect::<String>())
    } else {
        format!("…{}", chars[at..].iter().collect::<String>())
    }
}

/// Windows of `n` characters of every chain of up to three report escapes
/// and one other encoding of `secret`: what an output must not hold.
fn windows(secret: &str, n: usize) -> HashSet<String> {
    let mut forms = vec![secret.to_owned()];
    let all: Vec<&Enc> = REPORT_ESCAPES.iter().chain(OTHER_ENCODINGS).collect();
    let mut frontier = forms.clone();
    for _ in 0..3 {
        let next: Vec<String> = frontier
            .iter()
            .flat_map(|f| all.iter().map(move |(_, e)| e(f)))
            .collect();
        forms.extend(next.iter().cloned());
        frontier = next;
    }
    let mut out = HashSet::new();
    for f in forms {
        let c: Vec<char> = f.chars().collect();
        for w in c.windows(n) {
            out.insert(w.iter().collect());
        }
    }
    out
}

fn leaked(text: &str, windows: &HashSet<String>, n: usize) -> Option<String> {
    let c: Vec<char> = text.chars().collect();
    c.windows(n)
        .map(|w| w.iter().collect::<String>())
        .find(|w| windows.contains(w))
}

/// Issue 44's measured leak, end to end: the secret `ZQX"quo\te&amp<lt>'ap`
/// (and one of every character class) sent in a JSON body to the
/// reference's `POST /public/v1/messages`, which reflects it in its JSON
/// answer; the check fails, so the answer reaches every output escaped
/// twice (report.json) or escaped and quoted (JUnit, HTML, console,
/// summary.md). No 10-character piece of any form of either secret may be
/// in any of them.
#[test]
fn a_secret_reflected_in_a_json_body_leaves_no_piece_in_any_output() {
    let reference = RefHandle::start(&[]);
    let measured = "ZQX\"quo\\te&amp<lt>'ap";
    let every_class = "Qz\"\\<>&'%+/=?#`*_|[]! üßключ€😀-tail-k";
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("reflect.yaml");
    std::fs::write(
        &suite,
        "suite: reflect\ntarget:\n  headers: { Authorization: \"Bearer ref_test_key_a\" }\nchecks:\n  - id: reflected\n    steps:\n      - request: { method: POST, path: /public/v1/messages, headers: { Idempotency-Key: \"${uuid}\" }, json: { contact_id: 1, text: \"${secret.MEASURED}\" } }\n        expect: { status: 200, body_contains: \"never there\" }\n  - id: reflected-every-class\n    steps:\n      - request: { method: POST, path: /public/v1/messages, headers: { Idempotency-Key: \"${uuid}\" }, json: { contact_id: 1, text: \"${secret.EVERY}\" } }\n        expect: { status: 200, json: { \"$.text\": \"never there\" } }\n",
    )
    .unwrap();
    let summary = dir.path().join("summary.md");
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            &reference.url,
            "--summary-md",
            summary.to_str().unwrap(),
            "--verbose",
        ],
        &[("MEASURED", measured), ("EVERY", every_class)],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let all = outputs(dir.path(), &out, &summary);
    // The reflection reached the reports (masked), so the test is not vacuous.
    assert!(all[3].1.contains("[REDACTED]"), "{}", all[3].1);
    assert!(all[3].1.contains("\\\"text\\\""), "{}", all[3].1);
    const N: usize = 10;
    for secret in [measured, every_class] {
        let w = windows(secret, N);
        for (name, text) in &all {
            if let Some(piece) = leaked(text, &w, N) {
                panic!("a piece of {secret:?} ({piece:?}) is in {name}:\n{text}");
            }
        }
    }
}

/// Every output of a run: stdout, stderr, the three reports, summary.md.
fn outputs(dir: &Path, out: &std::process::Output, summary: &Path) -> Vec<(&'static str, String)> {
    let reports = dir.join("reports");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    vec![
        ("stdout", stdout(out)),
        ("stderr", stderr(out)),
        ("junit", read(&reports.join("junit.xml"))),
        ("json", read(&reports.join("report.json"))),
        ("html", read(&reports.join("report.html"))),
        ("summary.md", read(summary)),
    ]
}
