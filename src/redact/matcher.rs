//! Masking many forms at once: one Aho-Corasick pass for whole forms, and
//! for pieces of a form left at a cut (an excerpt's `…`, the start or end of
//! the text), a walk over the sorted forms from each place a form's first
//! (or last) [`MIN_CUT_PIECE`] characters stand near a cut.
//!
//! Why not a loop over the forms: a secret has up to thousands of forms
//! ([`super::forms::MAX_FORMS`]), and a report may hold megabytes and
//! hundreds of cuts. The pass is linear in the text; a piece costs a binary
//! search per byte of it, and only pieces that reach a cut are walked.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::{MASK, MIN_CUT_PIECE};

/// The compiled set of forms of every registered secret.
#[derive(Debug)]
pub struct Matcher {
    /// Leftmost-longest over every form: a secret containing another is
    /// masked whole.
    whole: AhoCorasick,
    /// Forms longer than [`MIN_CUT_PIECE`] characters, sorted by bytes.
    forward: Vec<Vec<u8>>,
    /// The same forms, bytes reversed, sorted.
    backward: Vec<Vec<u8>>,
    /// The first and last [`MIN_CUT_PIECE`] characters of those forms.
    heads: Option<AhoCorasick>,
    tails: Option<AhoCorasick>,
    /// The longest form in bytes (no piece is longer).
    longest: usize,
}

impl Matcher {
    /// Compiles `forms` (none empty).
    pub fn new(forms: &[String]) -> Matcher {
        let whole = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(forms)
            .expect("redactor forms compile");
        let long: Vec<&String> = forms
            .iter()
            .filter(|f| f.chars().count() > MIN_CUT_PIECE)
            .collect();
        let mut forward: Vec<Vec<u8>> = long.iter().map(|f| f.as_bytes().to_vec()).collect();
        forward.sort();
        forward.dedup();
        let mut backward: Vec<Vec<u8>> = forward
            .iter()
            .map(|f| f.iter().rev().copied().collect())
            .collect();
        backward.sort();
        let ends = |pick: fn(&str) -> &str| -> Option<AhoCorasick> {
            let mut v: Vec<&str> = long.iter().map(|f| pick(f)).collect();
            v.sort();
            v.dedup();
            (!v.is_empty()).then(|| AhoCorasick::new(v).expect("redactor pieces compile"))
        };
        Matcher {
            whole,
            heads: ends(head),
            tails: ends(tail),
            longest: forms.iter().map(String::len).max().unwrap_or(0),
            forward,
            backward,
        }
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.whole.is_match(text)
    }

    /// `text` with every form, and every piece of one at a cut, masked.
    pub fn redact(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        self.whole.replace_all_with(text, &mut out, |_, _, dst| {
            dst.push_str(MASK);
            true
        });
        self.mask_cut_pieces(&out)
    }

    /// Masks a head or tail of a form ([`MIN_CUT_PIECE`] characters or
    /// more) standing at a cut: before `…` or the end of the text (a cut-off
    /// prefix), after `…` or at the start of the text (a tail kept from the
    /// end).
    fn mask_cut_pieces(&self, text: &str) -> String {
        let mut ends = vec![text.len()];
        let mut starts = vec![0];
        for (i, _) in text.match_indices('…') {
            ends.push(i);
            starts.push(i + '…'.len_utf8());
        }
        ends.sort_unstable();
        starts.sort_unstable();
        let bytes = text.as_bytes();
        let mut cuts: Vec<(usize, usize)> = Vec::new();
        if let Some(heads) = &self.heads {
            for m in heads.find_overlapping_iter(text) {
                let p = m.start();
                // Only a head with a cut ahead of it, within a form's reach.
                if !any_in(&ends, m.end(), p + self.longest) {
                    continue;
                }
                let at = |k: usize| bytes.get(p + k).copied();
                let is_end =
                    |k: usize| ends.binary_search(&(p + k)).is_ok() && chars(text, p, p + k);
                if let Some(k) = longest_walk(&self.forward, at, is_end) {
                    cuts.push((p, p + k));
                }
            }
        }
        if let Some(tails) = &self.tails {
            for m in tails.find_overlapping_iter(text) {
                let q = m.end();
                if !any_in(&starts, q.saturating_sub(self.longest), m.start()) {
                    continue;
                }
                let at = |k: usize| q.checked_sub(k + 1).map(|i| bytes[i]);
                let is_start =
                    |k: usize| starts.binary_search(&(q - k)).is_ok() && chars(text, q - k, q);
                if let Some(k) = longest_walk(&self.backward, at, is_start) {
                    cuts.push((q - k, q));
                }
            }
        }
        if cuts.is_empty() {
            return text.to_owned();
        }
        cuts.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (a, b) in cuts {
            if b <= at {
                continue;
            }
            let a = a.max(at);
            out.push_str(&text[at..a]);
            out.push_str(MASK);
            at = b;
        }
        out.push_str(&text[at..]);
        out
    }
}

/// Whether a sorted `points` holds one in `lo..=hi`.
fn any_in(points: &[usize], lo: usize, hi: usize) -> bool {
    let i = points.partition_point(|&x| x < lo);
    points.get(i).is_some_and(|&x| x <= hi)
}

/// Whether `text[a..b]` is a piece: on character boundaries, at least
/// [`MIN_CUT_PIECE`] characters.
fn chars(text: &str, a: usize, b: usize) -> bool {
    text.get(a..b)
        .is_some_and(|s| s.chars().count() >= MIN_CUT_PIECE)
}

/// The longest `k` such that the bytes `at(0..k)` are a prefix of one of the
/// sorted `forms` and `stop(k)` holds, narrowing the range of forms that
/// share the prefix one byte at a time.
fn longest_walk(
    forms: &[Vec<u8>],
    at: impl Fn(usize) -> Option<u8>,
    stop: impl Fn(usize) -> bool,
) -> Option<usize> {
    let (mut lo, mut hi) = (0, forms.len());
    let mut best = None;
    let mut k = 0;
    while lo < hi {
        let Some(b) = at(k) else { break };
        let key = |f: &Vec<u8>| f.get(k).map_or(-1, |&x| i32::from(x));
        let b = i32::from(b);
        let first = lo + forms[lo..hi].partition_point(|f| key(f) < b);
        let past = first + forms[first..hi].partition_point(|f| key(f) == b);
        (lo, hi) = (first, past);
        if lo == hi {
            break;
        }
        k += 1;
        if stop(k) {
            best = Some(k);
        }
    }
    best
}

fn head(s: &str) -> &str {
    let end = s
        .char_indices()
        .nth(MIN_CUT_PIECE)
        .map_or(s.len(), |(i, _)| i);
    &s[..end]
}

fn tail(s: &str) -> &str {
    let n = s.chars().count();
    let start = s
        .char_indices()
        .nth(n.saturating_sub(MIN_CUT_PIECE))
        .map_or(0, |(i, _)| i);
    &s[start..]
}
