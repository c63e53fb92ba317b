//! Reporters: independent consumers of the event stream. The console writes
//! live to stderr; file reporters (JUnit, JSON) collect and write on finish,
//! which also happens when a run is cancelled. Every string passes through
//! the `Redactor` before it is written.

pub mod console;
pub mod contract;
pub mod html;
pub mod json;
pub mod junit;
pub mod plot;
pub mod summary;

use std::io;

use crate::events::Event;
use crate::run::EventListener;

pub trait Reporter {
    fn event(&mut self, e: &Event);
    /// Writes what was collected. Called once, after `RunFinished` or on cancel.
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Fans events out to every reporter.
#[derive(Default)]
pub struct Reporters(pub Vec<Box<dyn Reporter>>);

impl Reporters {
    pub fn push(&mut self, r: Box<dyn Reporter>) {
        self.0.push(r);
    }
    /// Finishes every reporter, returning the first error after trying all.
    pub fn finish(&mut self) -> io::Result<()> {
        let mut first = None;
        for r in &mut self.0 {
            if let Err(e) = r.finish() {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl EventListener for Reporters {
    fn event(&mut self, e: &Event) {
        for r in &mut self.0 {
            r.event(e);
        }
    }
}

pub use crate::files::{preflight, preflight_append, prepare, write_atomic};
