//! tminus: certifies HTTP integrations before launch.
//!
//! Layering (no arrows back): `suite` (YAML model with positions) -> `plan`
//! (validated, interpolated, defaults applied) -> `run` (executes, emits events)
//! -> `report` (consumes events). `reference` is the embedded reference
//! integration used as the default target and as the fixture for every test.

pub mod reference;
