//! Diagnostics in the style of rustc and Hurl: `file:line:col`, the source line
//! and a caret, plus an optional help line ("did you mean `status`?").

use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::Location;

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
    /// The offending source line, captured when the diagnostic is made so the
    /// rendering needs no file access.
    pub source_line: Option<String>,
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
        let source_line = if line > 0 {
            source.lines().nth((line - 1) as usize).map(str::to_owned)
        } else {
            None
        };
        Diagnostic {
            file: file.to_path_buf(),
            line,
            column,
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
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
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
        writeln!(f, "error: {}", self.message)?;
        writeln!(f, "  --> {}", self.position())?;
        if let Some(src) = &self.source_line {
            let num = self.line.to_string();
            let pad = " ".repeat(num.len());
            writeln!(f, "{pad} |")?;
            writeln!(f, "{num} | {src}")?;
            // Columns are character based; tabs keep their width so the caret lines up.
            let lead: String = src
                .chars()
                .take(self.column.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            writeln!(f, "{pad} | {lead}^")?;
        }
        if let Some(help) = &self.help {
            writeln!(f, "  = help: {help}")?;
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
