//! Reading past an unknown key or kind, so `validate` reports every one in a
//! file at once (issue 37) instead of the first.
//!
//! serde stops at the first error, and the suite's structs refuse unknown
//! keys (which is what makes "did you mean" possible). So the reader parses
//! again with each reported entry commented out: the key and everything
//! indented under it, or a whole check of an unknown kind. Every line keeps
//! its length and place, so later positions are those of the file itself.
//! An entry that cannot be cut cleanly (a key in a `{ flow: mapping }`, the
//! first key of a list item) ends the search with what was found.

/// 1-based line and column, as `serde_saphyr::Location` counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub line: u64,
    pub column: u64,
}

/// The leading spaces of a line, or `None` for a blank or comment-only line
/// (which neither belongs to an entry nor ends one).
fn indent(line: &str) -> Option<usize> {
    let trimmed = line.trim_start_matches([' ', '\t']);
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    Some(line.chars().count() - trimmed.chars().count())
}

/// `line` with the char at `index` replaced by `#`.
fn hash_at(line: &str, index: usize) -> String {
    line.chars()
        .enumerate()
        .map(|(i, c)| if i == index { '#' } else { c })
        .collect()
}

/// Comments out the lines after `first` (0-based) that belong to an entry
/// whose content starts at column index `col`: those indented deeper, and,
/// when `siblings`, those at `col` too (the other keys of a list item); a
/// `- ` line at `col` under a key is its compact sequence.
fn cut_following(lines: &mut [String], first: usize, col: usize, siblings: bool) {
    for line in lines.iter_mut().skip(first + 1) {
        let Some(ind) = indent(line) else { continue };
        let compact = !siblings && ind == col && line.trim_start().starts_with("- ");
        if ind > col || (siblings && ind == col) || compact {
            *line = hash_at(line, ind);
        } else {
            break;
        }
    }
}

fn split(text: &str) -> Vec<String> {
    text.split('\n').map(str::to_owned).collect()
}

/// Comments out the mapping entry whose key starts at `at`. False when the
/// key is not the first thing on its line (nothing is changed then).
pub fn cut_key(text: &mut String, at: At) -> bool {
    let mut lines = split(text);
    let (Some(row), Some(col)) = (
        (at.line as usize).checked_sub(1),
        (at.column as usize).checked_sub(1),
    ) else {
        return false;
    };
    let Some(line) = lines.get(row) else {
        return false;
    };
    if indent(line) != Some(col) {
        return false;
    }
    lines[row] = hash_at(line, col);
    cut_following(&mut lines, row, col, false);
    *text = lines.join("\n");
    true
}

/// Comments out the list item (`- key: ...`) whose mapping starts at `at`
/// (its first key, or its dash). False when it is not a block list item.
pub fn cut_item(text: &mut String, at: At) -> bool {
    let mut lines = split(text);
    let Some(row) = (at.line as usize).checked_sub(1) else {
        return false;
    };
    let Some(line) = lines.get(row) else {
        return false;
    };
    let Some(dash) = indent(line) else {
        return false;
    };
    let rest: String = line.chars().skip(dash).collect();
    let Some(after) = rest.strip_prefix('-') else {
        return false;
    };
    let gap = after.chars().take_while(|c| *c == ' ').count();
    if gap == 0 {
        return false;
    }
    let key = dash + 1 + gap;
    let col = at.column as usize - 1;
    if col != key && col != dash {
        return false;
    }
    lines[row] = hash_at(line, dash);
    cut_following(&mut lines, row, key, true);
    *text = lines.join("\n");
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u64, column: u64) -> At {
        At { line, column }
    }

    #[test]
    fn a_key_goes_with_what_is_under_it() {
        let mut t = "a:\n  bad: |\n    text\n\n  good: 1\nb: 2\n".to_owned();
        assert!(cut_key(&mut t, at(2, 3)));
        assert_eq!(t, "a:\n  #ad: |\n    #ext\n\n  good: 1\nb: 2\n");
        let mut t = "bad:\n- 1\n- 2\nok: 3\n".to_owned();
        assert!(cut_key(&mut t, at(1, 1)));
        assert_eq!(t, "#ad:\n# 1\n# 2\nok: 3\n");
    }

    #[test]
    fn a_key_not_first_on_its_line_is_left() {
        let mut t = "a: { bad: 1 }\n".to_owned();
        assert!(!cut_key(&mut t, at(1, 6)));
        let mut t = "- bad: 1\n".to_owned();
        assert!(!cut_key(&mut t, at(1, 3)));
        assert_eq!(t, "- bad: 1\n");
    }

    #[test]
    fn an_item_goes_whole() {
        let mut t =
            "checks:\n  - id: a\n    kind: x\n    request:\n      path: /\n  - id: b\n".to_owned();
        assert!(cut_item(&mut t, at(2, 5)));
        assert_eq!(
            t,
            "checks:\n  # id: a\n    #ind: x\n    #equest:\n      #ath: /\n  - id: b\n"
        );
        let mut t = "checks: [{ id: a }]\n".to_owned();
        assert!(!cut_item(&mut t, at(1, 12)));
    }
}
