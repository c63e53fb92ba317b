//! Small helpers on words for messages.

/// The closest candidate within an edit distance of 2, for "did you mean".
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(word, c), c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
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
