//! Small helpers on text: "did you mean" for messages, percent-encoding,
//! Markdown that shows text as written (the CI summaries), and the HTML and
//! JUnit reports' escapes. The escapes live here, below the redactor, so it
//! registers every secret in the forms the outputs make with the very same
//! functions.

/// The closest candidate within an edit distance of 2, for "did you mean".
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(word, c), c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Percent-encoding of every byte outside RFC 3986's unreserved set:
/// `plus_for_space` as HTML forms do, `upper` hex as RFC 3986 recommends
/// (some encoders write lower case). tminus sends the upper-case, no-plus
/// form; the redactor also masks the others a target may echo.
pub fn percent_encode(s: &str, plus_for_space: bool, upper: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b' ' if plus_for_space => out.push('+'),
            b if upper => out.push_str(&format!("%{b:02X}")),
            b => out.push_str(&format!("%{b:02x}")),
        }
    }
    out
}

/// Text that Markdown shows as written: one line, and no character that
/// would start markup, a link or HTML (a target's message may hold any).
pub fn markdown_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A code span; backticks and pipes (a table cell's end even inside code)
/// cannot occur inside one, so they are replaced.
pub fn markdown_code(s: &str) -> String {
    let inner: String = s
        .chars()
        .map(|c| match c {
            '`' => '\'',
            '|' => '/',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    format!("`{inner}`")
}

/// Text as HTML shows it: markup characters escaped, control characters
/// from a target's text (or a file's) shown as escapes, never kept.
pub fn html_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// `s` as text XML 1.0 carries and CI parsers keep. Replaced by a visible
/// escape (`\u{1b}`, as on the console):
/// - what XML 1.0 forbids: C0 controls other than tab, newline and CR,
///   U+FFFE and U+FFFF;
/// - what it discourages and parsers may reject: DEL, C1 controls
///   (U+0080-U+009F) and the other non-characters (U+FDD0-U+FDEF, the last
///   two code points of every plane);
/// - ESC, which quick-junit takes as the start of a terminal escape
///   sequence and drops with everything up to its end: an unterminated
///   `ESC ]` would delete the rest of the failure text.
///
/// Applied after redaction: a secret is masked before it could be escaped.
pub fn xml_text(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if needs_escape(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    let n = c as u32;
    match c {
        // A parser turns CR (and CR LF) into a newline, which loses nothing.
        '\t' | '\n' | '\r' => false,
        c if c.is_control() => true,
        '\u{FDD0}'..='\u{FDEF}' => true,
        _ => n & 0xFFFE == 0xFFFE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_nearest_close_word() {
        let kinds = ["steps", "status", "stats"];
        assert_eq!(suggest("stpes", kinds), Some("steps"));
        assert_eq!(suggest("statu", kinds), Some("status"));
        assert_eq!(suggest("zzzzzz", kinds), None);
        assert_eq!(suggest("x", []), None);
    }
}
