//! Contract drift: responses judged against the API's OpenAPI document
//! (issue 26). A suite's `contract: { openapi: FILE }` loads the document
//! (`load.rs`: OpenAPI 3.0 or 3.1, YAML or JSON, local and relative-file
//! `$ref`s; `normalize.rs`: 3.0 schemas as JSON Schema 2020-12), builds its
//! operation table with compiled validators (`operation.rs`), matches each
//! request to an operation (`matcher.rs`), judges the response
//! (`judge.rs`), and, during a run, watches every response the probe's
//! client sees and tallies them per check and per operation (`watch.rs`).
//! `diff/` compares two versions of a document (`tminus contract diff`,
//! issue 43).
//!
//! Layer: below the families and the runner (which hook it into the HTTP
//! client and put its verdicts on checks); it uses `http`, `model`,
//! `outcome` and `files` only.

pub mod deprecation;
pub mod diff;
mod ignore;
mod judge;
mod load;
mod matcher;
mod normalize;
mod operation;
mod watch;
pub mod webhooks;

use std::path::Path;

pub use ignore::IgnoredPath;
pub use judge::{Level, Seen, Violation};
pub use load::{Document, Version};
pub use operation::{is_json, written, Operation, Schemas, Written};
pub use watch::Watch;

/// The property a check gets when the suite has a contract.
pub const PROPERTY: &str = "contract";

/// A loaded document, ready to judge responses.
#[derive(Debug)]
pub struct Contract {
    /// The document's name as given (for reports).
    pub source: String,
    pub version: Version,
    pub openapi: String,
    bases: Vec<String>,
    operations: Vec<Operation>,
    /// `contract.ignore`: paths that are not part of the API.
    ignored: Vec<IgnoredPath>,
    /// The level of an absent `required: true` response header.
    required_header: Level,
    /// The document's `webhooks:` event schemas (CON-004).
    webhooks: Vec<webhooks::WebhookEvent>,
}

/// What judging one response found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// An operation's response; no violation means it conforms.
    Operation {
        operation: String,
        /// Its place in [`Contract::operations`].
        index: usize,
        violations: Vec<Violation>,
    },
    /// The path matches a template but not with this method, or no
    /// template at all, and the target said so (404, 405, 501): what an API
    /// does for what it does not serve. Not drift.
    NotServed,
    /// No operation for the path, and the target answered anyway.
    Undocumented { path: String },
    /// The path is one of `contract.ignore`: not part of the API.
    Ignored,
}

/// Reads the document at `path` and every file it refers to, without
/// building its operation table (`tminus init --from-openapi` walks it).
pub fn load_document(path: &Path) -> Result<Document, String> {
    load::load_file(path)
}

/// [`load_document`] of a document held in memory (it may only refer to
/// itself).
pub fn load_document_text(text: &str, name: &str) -> Result<Document, String> {
    load::load_text(text, name)
}

impl Contract {
    /// Loads the document at `path` (and the files it refers to).
    pub fn load(path: &Path) -> Result<Contract, String> {
        let doc = load::load_file(path)?;
        Self::from_document(path.display().to_string(), &doc)
    }

    /// Loads a document held in memory (it may only refer to itself).
    pub fn from_text(text: &str, name: &str) -> Result<Contract, String> {
        let doc = load::load_text(text, name)?;
        Self::from_document(name.to_owned(), &doc)
    }

    /// Builds the operation table of a document already loaded.
    pub fn from_document(source: String, doc: &Document) -> Result<Contract, String> {
        let operations = operation::operations(doc).map_err(|e| format!("{source}: {e}"))?;
        let webhooks = webhooks::webhooks(doc).map_err(|e| format!("{source}: {e}"))?;
        Ok(Contract {
            source,
            version: doc.version,
            openapi: doc.openapi.clone(),
            bases: matcher::base_paths(doc.root_value()),
            operations,
            ignored: Vec::new(),
            required_header: Level::Should,
            webhooks,
        })
    }

    /// This contract with an absent required response header judged at
    /// `level`: MUST under `profile: botix`, whose checklist makes the
    /// document the contract ("CI fails on an incompatible change"); SHOULD
    /// under `standard`.
    pub fn required_header_level(mut self, level: Level) -> Contract {
        self.required_header = level;
        self
    }

    /// This contract, never judging the paths of `ignored`.
    pub fn ignoring(mut self, ignored: Vec<IgnoredPath>) -> Contract {
        self.ignored = ignored;
        self
    }

    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// The document's `webhooks:` event schemas (empty: it gives none).
    pub fn webhooks(&self) -> &[webhooks::WebhookEvent] {
        &self.webhooks
    }

    /// The operation `method` and `url` (absolute, or a path) are.
    pub fn find(&self, method: &str, url: &str) -> Option<&Operation> {
        self.find_index(method, url).map(|i| &self.operations[i])
    }

    fn find_index(&self, method: &str, url: &str) -> Option<usize> {
        let path = path_of(url);
        let method = method.to_ascii_uppercase();
        let candidates = self
            .operations
            .iter()
            .enumerate()
            .filter(|(_, o)| o.method == method)
            .map(|(i, o)| (i, &o.template, o.bases.as_deref()));
        matcher::best(candidates, &self.bases, &path)
    }

    /// Judges one response to `method url`.
    pub fn judge(&self, method: &str, url: &str, seen: &Seen<'_>) -> Verdict {
        if !self.ignored.is_empty() {
            let path = path_of(url);
            if self.ignored.iter().any(|i| i.matches(&path)) {
                return Verdict::Ignored;
            }
        }
        match self.find_index(method, url) {
            Some(index) => Verdict::Operation {
                operation: self.operations[index].id.clone(),
                index,
                violations: judge::judge(&self.operations[index], seen, self.required_header),
            },
            None if matches!(seen.status, 404 | 405 | 501) => Verdict::NotServed,
            // A CORS preflight is answered by the CORS layer, not the API,
            // and documents rarely list it: not drift unless documented.
            None if method.eq_ignore_ascii_case("OPTIONS") => Verdict::Ignored,
            None => Verdict::Undocumented { path: path_of(url) },
        }
    }
}

/// The path of `url` (absolute or already a path), without query or fragment.
fn path_of(url: &str) -> String {
    let rest = match url.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => url,
    };
    let path = rest.split(['?', '#']).next().unwrap_or("/");
    if path.is_empty() {
        "/".into()
    } else {
        path.to_owned()
    }
}
