//! Small helpers on text: "did you mean" for messages, percent-encoding.

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
