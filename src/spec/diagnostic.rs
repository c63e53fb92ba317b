//! Diagnostics in the style of rustc and Hurl: `file:line:col`, the source line
//! and a caret, plus an optional help line ("did you mean `status`?").

use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::Location;

use crate::redact::Redactor;

/// One problem found in a suite file, with enough context to render it alone.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based; 0 when the position is unknown.
    pub line: u64,
    /// 1-based; 0 when the position is unknown.
    pub column: u64,
    pub message: String,
    pub help: Option<String>,
    /// The offending source line (a window of it around the column, control
    /// characters escaped), captured when the diagnostic is made so the
    /// rendering needs no file access.
    pub source_line: Option<String>,
    /// 1-based character position of the caret in `source_line`.
    pub caret: u64,
}

/// Characters of a source line shown on each side of the caret.
const EXCERPT_RADIUS: usize = 60;

/// A printable window of `text` around 1-based character `column`: at most
/// `EXCERPT_RADIUS` characters each side, `…` where it was cut, control
/// characters escaped (`\u{1b}`) so a suite cannot drive the terminal. Returns
/// the window and the caret's 1-based position in it.
pub fn excerpt(text: &str, column: u64) -> (String, u64) {
    let chars: Vec<char> = text.chars().collect();
    let col = (column.max(1) as usize - 1).min(chars.len());
    let start = col.saturating_sub(EXCERPT_RADIUS);
    let end = (col + EXCERPT_RADIUS).min(chars.len());
    let mut out = String::new();
    let mut caret = 1u64;
    if start > 0 {
        out.push('…');
        caret += 1;
    }
    for (i, c) in chars[start..end].iter().enumerate() {
        let piece = match c {
            // One column for a tab, so the caret (spaces) lines up.
            '\t' => " ".to_owned(),
            c if c.is_control() => c.escape_unicode().to_string(),
            c => c.to_string(),
        };
        if start + i < col {
            caret += piece.chars().count() as u64;
        }
        out.push_str(&piece);
    }
    if end < chars.len() {
        out.push('…');
    }
    (out, caret)
}

/// `text` with control characters (other than newlines) escaped.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' => "\n".to_owned(),
            c if c.is_control() => c.escape_unicode().to_string(),
            c => c.to_string(),
        })
        .collect()
}

impl Diagnostic {
    pub fn new(file: &Path, source: &str, loc: Location, message: impl Into<String>) -> Self {
        Self::at(file, source, loc.line(), loc.column(), message)
    }

    pub fn at(
        file: &Path,
        source: &str,
        line: u64,
        column: u64,
        message: impl Into<String>,
    ) -> Self {
        // Only a window of the line is kept: a 50 MB single-line suite must not
        // be echoed back whole. `column` becomes the caret's place in it.
        let (source_line, caret) = match line {
            0 => (None, column),
            _ => match source.lines().nth((line - 1) as usize) {
                Some(text) => {
                    let (shown, caret) = excerpt(text, column);
                    (Some(shown), caret)
                }
                None => (None, column),
            },
        };
        Diagnostic {
            file: file.to_path_buf(),
            line,
            column,
            caret,
            message: message.into(),
            help: None,
            source_line,
        }
    }

    /// A problem with a file as a whole (unreadable, not a suite).
    pub fn file_level(file: &Path, message: impl Into<String>) -> Self {
        Diagnostic {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
            message: message.into(),
            help: None,
            source_line: None,
            caret: 0,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Masks every secret the plan registered in the message, the help and
    /// the source line (which may show a secret written inline), keeping
    /// the caret on the same text: diagnostics are output like any other.
    pub fn redact(&mut self, r: &Redactor) {
        self.message = r.redact(&self.message);
        self.help = self.help.as_deref().map(|h| r.redact(h));
        let Some(line) = &self.source_line else {
            return;
        };
        let masked = r.redact(line);
        if masked == *line {
            return;
        }
        let at = self.caret.saturating_sub(1) as usize;
        let before: String = line.chars().take(at).collect();
        let before = r.redact(&before);
        self.caret = if masked.starts_with(&before) {
            before.chars().count() as u64 + 1
        } else {
            // A secret across the caret: point at its mask.
            let same = line
                .chars()
                .zip(masked.chars())
                .take_while(|(a, b)| a == b)
                .count();
            same as u64 + 1
        };
        self.source_line = Some(masked);
    }

    /// `file:line:col`, or just the file when the position is unknown.
    pub fn position(&self) -> String {
        if self.line == 0 {
            self.file.display().to_string()
        } else {
            format!("{}:{}:{}", self.file.display(), self.line, self.column)
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "error: {}", printable(&self.message))?;
        writeln!(f, "  --> {}", self.position())?;
        if let Some(src) = &self.source_line {
            let num = self.line.to_string();
            let pad = " ".repeat(num.len());
            writeln!(f, "{pad} |")?;
            writeln!(f, "{num} | {src}")?;
            let lead = " ".repeat(self.caret.saturating_sub(1) as usize);
            writeln!(f, "{pad} | {lead}^")?;
        }
        if let Some(help) = &self.help {
            writeln!(f, "  = help: {}", printable(help))?;
        }
        Ok(())
    }
}

/// Every diagnostic of a run, collected before anything is sent.
#[derive(Debug, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }
    /// [`Diagnostic::redact`] on every diagnostic.
    pub fn redact(&mut self, r: &Redactor) {
        for d in &mut self.0 {
            d.redact(r);
        }
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

/// The closest candidate within an edit distance of 2 (lives in `model`).
pub use crate::model::text::suggest;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_clipped_around_the_caret() {
        let line = format!("{}stauts: 200{}", "a".repeat(5000), "b".repeat(5000));
        let (shown, caret) = excerpt(&line, 5001);
        assert!(shown.chars().count() <= 2 * EXCERPT_RADIUS + 2, "{shown}");
        assert!(shown.starts_with('…') && shown.ends_with('…'));
        let at: String = shown.chars().skip(caret as usize - 1).take(6).collect();
        assert_eq!(at, "stauts");
    }

    #[test]
    fn control_characters_are_escaped_and_the_caret_still_lines_up() {
        let (shown, caret) = excerpt("a: \u{1b}[2Jx\tkey", 10);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        let at: String = shown.chars().skip(caret as usize - 1).take(3).collect();
        assert_eq!(at, "key");
        let d = Diagnostic::at(
            Path::new("s.yaml"),
            "x: \u{7}\u{1b}]52;c;AAAA\u{7}",
            1,
            4,
            "bad \u{1b}[2J value",
        );
        let text = d.to_string();
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
    }

    /// Issue 24 item 10: a diagnostic is redacted like every other output,
    /// and its caret stays on the text it pointed at.
    #[test]
    fn secrets_are_masked_and_the_caret_follows() {
        let r = Redactor::new();
        r.add("hunter2-secret");
        let src = "  headers: { X-Key: hunter2-secret, Bad Name: x }\n";
        let col = src.find("Bad").unwrap() as u64 + 1;
        let mut d = Diagnostic::at(
            Path::new("s.yaml"),
            src,
            1,
            col,
            "`hunter2-secret` is not valid",
        )
        .with_help("try hunter2-secret");
        d.redact(&r);
        let text = d.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        let line = d.source_line.clone().unwrap();
        let at: String = line.chars().skip(d.caret as usize - 1).take(3).collect();
        assert_eq!(at, "Bad", "{text}");
    }

    #[test]
    fn short_lines_are_shown_whole() {
        let (shown, caret) = excerpt("          stauts: 200", 11);
        assert_eq!(shown, "          stauts: 200");
        assert_eq!(caret, 11);
    }
}
