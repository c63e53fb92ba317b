//! Waivers: a known, accepted deviation written on a check
//! (`waive: { property, reason, until: 2027-01-31 }`, or a list of them).
//! Until the date (inclusive, UTC) a broken property is reported `waived`
//! (neither passed nor failed) with its reason; from the next day on the
//! property fails with "waiver expired on DATE", whatever it did, so a
//! deviation cannot stay silent forever: someone fixes it, renews the waiver
//! or removes it.
//!
//! The spec type (read with positions) and how a waiver changes an
//! [`Outcome`] live here (the dates and what a waiver did, plain values the
//! outcome carries, in `model::waiver`), below the plan and the runner; the plan checks
//! the property names against the kind's table, the runner applies the
//! waivers with today's date (tests inject theirs).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_saphyr::Spanned;

pub use crate::model::waiver::{Date, Waiver, WaiverNote, WaiverState};
use crate::outcome::{Outcome, Verdict};

/// One `waive:` entry as a suite writes it.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaiverSpec {
    /// The property waived, as the kind's table names it (`marker`).
    #[schemars(with = "String")]
    pub property: Spanned<String>,
    /// Why the deviation is accepted (shown in every report).
    #[schemars(with = "String")]
    pub reason: Spanned<String>,
    /// The last day (UTC, `YYYY-MM-DD`) the waiver holds.
    #[schemars(with = "String")]
    pub until: Spanned<String>,
}

/// `waive:`: one entry or a list of them (a custom visitor, not
/// `serde(untagged)`, so errors keep their positions and wording).
#[derive(Debug, Clone, Default)]
pub struct Waivers(pub Vec<WaiverSpec>);

impl<'de> Deserialize<'de> for Waivers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Waivers;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a waiver `{ property, reason, until: YYYY-MM-DD }` or a list of them")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Waivers, A::Error> {
                WaiverSpec::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|w| Waivers(vec![w]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Waivers, A::Error> {
                let mut out = Vec::new();
                while let Some(w) = seq.next_element::<WaiverSpec>()? {
                    out.push(w);
                }
                Ok(Waivers(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for Waivers {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Waivers".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one = g.subschema_for::<WaiverSpec>();
        schemars::json_schema!({
            "description": "accepted deviations: a waiver or a list of them",
            "anyOf": [one, { "type": "array", "items": one }]
        })
    }
}

/// Checks a check's `waive:` against the properties its kind judges.
/// Errors come with the position to point at.
pub fn plan(
    spec: Option<&Spanned<Waivers>>,
    properties: &[&'static str],
    kind: &str,
) -> Result<Vec<Waiver>, Vec<(serde_saphyr::Location, String)>> {
    let Some(spec) = spec else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for w in &spec.value.0 {
        let name = w.property.value.as_str();
        let property = properties.iter().copied().find(|p| *p == name);
        if property.is_none() {
            let hint = crate::model::text::suggest(name, properties.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            errors.push((
                w.property.referenced,
                format!(
                    "`waive:` names `{name}`, which `{kind}` does not judge (its properties: {}){hint}",
                    properties.join(", ")
                ),
            ));
        }
        if out.iter().any(|x: &Waiver| x.property == name) {
            errors.push((
                w.property.referenced,
                format!("`{name}` is waived twice: give it one waiver"),
            ));
        }
        if w.reason.value.trim().is_empty() {
            errors.push((
                w.reason.referenced,
                "a waiver needs a `reason` (every report shows it)".to_owned(),
            ));
        }
        let until = Date::parse(w.until.value.trim())
            .map_err(|e| errors.push((w.until.referenced, format!("`until:` {e}"))))
            .ok();
        if let (Some(property), Some(until)) = (property, until) {
            out.push(Waiver {
                property,
                reason: w.reason.value.trim().to_owned(),
                until,
            });
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// One property's verdict and message under a waiver, on `today`.
fn judge(
    w: &Waiver,
    today: Date,
    verdict: Verdict,
    message: &str,
) -> (Verdict, String, WaiverState) {
    let expired = today > w.until;
    // A property tminus could not judge (or did not run) stays so: a
    // waiver is no evidence, and an expired one must not turn "could not
    // judge" (exit 3) into a verdict.
    if matches!(verdict, Verdict::Error | Verdict::Skipped) {
        let state = if expired {
            WaiverState::Expired
        } else {
            WaiverState::Unused
        };
        return (verdict, message.to_owned(), state);
    }
    if expired {
        let was = match verdict {
            Verdict::Pass => "it now holds: remove the waiver".to_owned(),
            v => format!("{}: {message}", v.as_str()),
        };
        return (
            Verdict::Fail,
            format!("waiver expired on {} ({}); {was}", w.until, w.reason),
            WaiverState::Expired,
        );
    }
    match verdict {
        Verdict::Fail | Verdict::Warn => (
            Verdict::Waived,
            format!(
                "waived until {}: {} (was {}: {message})",
                w.until,
                w.reason,
                verdict.as_str()
            ),
            WaiverState::Applied,
        ),
        v => (v, message.to_owned(), WaiverState::Unused),
    }
}

impl Outcome {
    /// Applies `waivers` on `today`: each waived property's verdict becomes
    /// waived (broken, in force), failed (expired) or stays (held). A check
    /// without per-property assertions is its one property. Refolds the
    /// check's verdict and lists every waiver on the outcome.
    ///
    /// `single`: the kind's property when it judges only one. An outcome
    /// without assertions of a kind that judges several (it stopped before
    /// judging them) is waived by nothing, but still failed by an expired
    /// waiver.
    pub fn apply_waivers(&mut self, waivers: &[Waiver], single: Option<&str>, today: Date) {
        if waivers.is_empty() {
            return;
        }
        for w in waivers {
            let state = if self.assertions.is_empty() {
                let (v, m, state) = judge(w, today, self.verdict, &self.message);
                let applies = single == Some(w.property) || state == WaiverState::Expired;
                if applies && state != WaiverState::Unused {
                    self.verdict = v;
                    self.message = m;
                }
                if applies && state == WaiverState::Expired && v == Verdict::Fail {
                    self.expected = Some(format!("a waiver in force today ({today})"));
                    self.actual = Some(format!("waiver until {}", w.until));
                }
                match state {
                    WaiverState::Applied if !applies => WaiverState::Unused,
                    s => s,
                }
            } else {
                let Some(a) = self
                    .assertions
                    .iter_mut()
                    .find(|a| a.property == w.property)
                else {
                    // Not judged in this run (a policy turned it off): listed only.
                    self.waivers.push(WaiverNote {
                        property: w.property,
                        reason: w.reason.clone(),
                        until: w.until,
                        state: if today > w.until {
                            WaiverState::Expired
                        } else {
                            WaiverState::Unused
                        },
                    });
                    continue;
                };
                let (v, m, state) = judge(w, today, a.verdict, &a.message);
                if state != WaiverState::Unused {
                    a.verdict = v;
                    a.message = m;
                }
                if state == WaiverState::Expired && v == Verdict::Fail {
                    a.expected = Some(format!("a waiver in force today ({today})"));
                    a.actual = Some(format!("waiver until {}", w.until));
                }
                state
            };
            self.waivers.push(WaiverNote {
                property: w.property,
                reason: w.reason.clone(),
                until: w.until,
                state,
            });
        }
        self.refold();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Assertion;

    fn d(s: &str) -> Date {
        Date::parse(s).unwrap()
    }

    fn waiver(property: &'static str, until: &str) -> Waiver {
        Waiver {
            property,
            reason: "fix due in v2".into(),
            until: d(until),
        }
    }

    fn broken() -> Outcome {
        Outcome::judged(vec![
            Assertion::pass("single_effect", "one execution"),
            Assertion::fail(
                "marker",
                "no replay marker",
                "Idempotent-Replayed",
                "absent",
            ),
        ])
    }

    #[test]
    fn a_waiver_in_force_waives_a_broken_property_through_its_last_day() {
        for today in ["2027-01-01", "2027-01-31"] {
            let mut o = broken();
            o.apply_waivers(&[waiver("marker", "2027-01-31")], None, d(today));
            assert_eq!(o.verdict, Verdict::Waived, "{today}");
            assert_eq!(o.assertions[1].verdict, Verdict::Waived);
            assert!(o.assertions[1]
                .message
                .starts_with("waived until 2027-01-31: fix due in v2 (was fail: no replay marker"));
            assert_eq!(o.waivers[0].state, WaiverState::Applied);
            // The property that held stays passed.
            assert_eq!(o.assertions[0].verdict, Verdict::Pass);
        }
    }

    #[test]
    fn the_day_after_the_waiver_fails_the_property() {
        let mut o = broken();
        o.apply_waivers(&[waiver("marker", "2027-01-31")], None, d("2027-02-01"));
        assert_eq!(o.verdict, Verdict::Fail);
        let a = &o.assertions[1];
        assert_eq!(a.verdict, Verdict::Fail);
        assert!(
            a.message.starts_with(
                "waiver expired on 2027-01-31 (fix due in v2); fail: no replay marker"
            ),
            "{}",
            a.message
        );
        assert_eq!(o.waivers[0].state, WaiverState::Expired);
        // Expired also when the property holds now: the stale waiver is the finding.
        let mut held = Outcome::judged(vec![Assertion::pass("marker", "present")]);
        held.apply_waivers(&[waiver("marker", "2020-01-01")], None, d("2026-12-02"));
        assert_eq!(held.verdict, Verdict::Fail);
        assert!(
            held.message.contains("it now holds: remove the waiver"),
            "{}",
            held.message
        );
    }

    #[test]
    fn an_unneeded_waiver_is_listed_and_changes_nothing() {
        let mut o = Outcome::judged(vec![Assertion::pass("marker", "present")]);
        o.apply_waivers(&[waiver("marker", "2099-01-01")], None, d("2026-12-02"));
        assert_eq!(o.verdict, Verdict::Pass);
        assert_eq!(o.waivers[0].state, WaiverState::Unused);
        // An unjudged property stays an error: a waiver is no evidence.
        let mut e = Outcome::judged(vec![Assertion::not_exercised("marker", "no replay seen")]);
        e.apply_waivers(&[waiver("marker", "2099-01-01")], None, d("2026-12-02"));
        assert_eq!(e.verdict, Verdict::Error);
        // Nor does an expired one turn "could not judge" into a failure.
        let mut x = Outcome::error("counter gave no number");
        x.apply_waivers(&[waiver("marker", "2020-01-01")], None, d("2026-12-02"));
        assert_eq!(x.verdict, Verdict::Error);
        assert_eq!(x.waivers[0].state, WaiverState::Expired);
    }

    #[test]
    fn a_one_property_check_is_waived_whole() {
        let mut o = Outcome::fail("status 500", "200", "500");
        o.apply_waivers(
            &[waiver("steps", "2099-01-01")],
            Some("steps"),
            d("2026-12-02"),
        );
        assert_eq!(o.verdict, Verdict::Waived);
        assert!(o.message.contains("fix due in v2"));
        // A multi-property kind that stopped before judging: a waiver of one
        // property does not waive the whole check.
        let mut early = Outcome::fail("status 500", "200", "500");
        early.apply_waivers(&[waiver("marker", "2099-01-01")], None, d("2026-12-02"));
        assert_eq!(early.verdict, Verdict::Fail);
        assert_eq!(early.waivers[0].state, WaiverState::Unused);
        let mut x = Outcome::fail("status 500", "200", "500");
        x.apply_waivers(
            &[waiver("steps", "2026-12-01")],
            Some("steps"),
            d("2026-12-02"),
        );
        assert_eq!(x.verdict, Verdict::Fail);
        assert!(x.message.starts_with("waiver expired on 2026-12-01"));
    }
}
