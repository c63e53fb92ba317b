//! The kinds whose requests go one after another (`idempotency.replay`,
//! `distinct_keys`, `mismatch`): the side-effect counter is read before the
//! first request and after **each** request, so every execution is
//! attributed to the request that caused it (a first request that executed
//! nothing cannot lend its execution to a second one that did).
// An `Outcome` is the early-return value of a check (see `exec.rs`).
#![allow(clippy::result_large_err)]

use serde_json::Value;

use crate::families::common::describe;
use crate::families::idempotency::exec::{
    compare_bodies, needs, select, unless_failed, Counted, Res, Run,
};
use crate::families::idempotency::plan::MarkerPolicy;
use crate::model::jsonpath::JsonPath;
use crate::outcome::{prop, Assertion, Outcome, Verdict};

/// IDEM-002, one verdict per property: one execution (the first's, none
/// for the replay), the same status, the same body, the marker on the
/// replay and none on the first answer; then the control (`key_not_content`):
/// the same body under a new key must execute, or the replay above may be a
/// de-duplication by content and proves nothing about the key.
pub(super) async fn replay(mut r: Run<'_>, ignore: &[JsonPath], id_path: Option<&JsonPath>) -> Res {
    let key = r.new_key();
    let req = r.render(&r.ctx.target, Some(&key));
    let before = r.counter("counter before").await?;
    let first = r.send_counted(&req, "first", "first", before).await?;
    r.require_success(&first.ex, "first")?;
    let second = r
        .send_counted(&req, "replay", "replay", first.after)
        .await?;
    // The control: the very same bytes under a key never used.
    let mut other = req.clone();
    other.set_header(&r.plan.key_header, r.new_key());
    let control = r
        .send_counted(&other, "same body, new key", "control", second.after)
        .await?;
    let executions = first.executions + second.executions;
    r.props.push(prop("executions", executions));
    let after = second.after;
    let counter = r.plan.effects.value.to_string();
    let (f, s) = (describe(&first.ex), describe(&second.ex));
    let who = match (first.executions, second.executions) {
        (1, 1) => ": the first executed and so did the replay",
        (0, 1) => ": the first executed nothing and the replay executed",
        (0, 0) => ": neither executed",
        _ => "",
    };
    let mut judged = vec![
        Assertion::check(
            "single_effect",
            first.executions == 1 && second.executions == 0,
            format!(
                "the side-effect counter {counter} went from {before} to {} after the first and stayed there after the replay: one execution for two requests",
                first.after
            ),
            format!(
                "two requests with one key: the side-effect counter {counter} went from {before} to {after} ({executions} execution(s), expected 1){who}"
            ),
            "1 execution(s), the first's",
            format!(
                "{executions} execution(s) (first {}, replay {})",
                first.executions, second.executions
            ),
        ),
        Assertion::check(
            "same_status",
            first.ex.status() == second.ex.status(),
            format!("first {f}, replay {s}"),
            format!("the replay answered {s} but the first request {f}"),
            format!("status {}", first.ex.status()),
            format!("status {}", second.ex.status()),
        ),
    ];
    let diffs = compare_bodies(&first.ex, &second.ex, ignore, id_path);
    judged.push(Assertion::check(
        "same_body",
        diffs.is_empty(),
        match id_path {
            Some(p) => format!("the same resource id at {p}"),
            None if ignore.is_empty() => "byte-for-byte the same JSON body".to_owned(),
            None => format!("the same JSON body (ignoring {})", ignore.len()),
        },
        format!(
            "the replay's body differs from the first at {} (first {f}, replay {s})",
            diffs.join(", ")
        ),
        "the same body",
        format!("differs at {}", diffs.join(", ")),
    ));
    let m = &r.plan.marker;
    let shown = r.marker_text(&second.ex);
    judged.push(match m.policy {
        MarkerPolicy::Required => Assertion::check(
            "marker",
            r.marked(&second.ex),
            format!("the replay carries {shown}"),
            format!(
                "the replay {s} carries {shown}, expected {} in {:?}",
                m.header, m.values
            ),
            format!("{}: {}", m.header, m.values.join(" or ")),
            shown,
        ),
        MarkerPolicy::Forbidden => Assertion::check(
            "marker",
            second.ex.response.header(&m.header).is_none(),
            format!("the replay carries no {}, as this suite asks", m.header),
            format!("the replay carries {shown}, which this suite forbids"),
            format!("no {}", m.header),
            shown,
        ),
        MarkerPolicy::Optional => Assertion::skipped(
            "marker",
            format!("not judged: `marker.policy: optional` ({shown})"),
        ),
    });
    let first_shown = r.marker_text(&first.ex);
    judged.push(Assertion::check(
        "first_not_marked",
        !r.marked(&first.ex),
        format!("the first answer carries {first_shown}"),
        format!("the first {f} is marked as a replay ({first_shown}) although the key was new"),
        format!("no {} on a first execution", m.header),
        first_shown,
    ));
    // The answers are compared as "a replay of a stored result" only when
    // the first request stored something: executed nothing, it proves nothing.
    let mut judged: Vec<Assertion> = judged
        .into_iter()
        .map(|a| {
            if a.property == "single_effect" {
                return a;
            }
            needs(first.executions >= 1, a, || {
                format!(
                    "the side-effect counter {counter} did not move after the first request ({before} to {}): nothing was executed, so no stored result was replayed",
                    first.after
                )
            })
        })
        .collect();
    let (verdict, by_content) = key_not_content(&r, &first, &second, &control);
    if by_content {
        // What the replay showed may be the content's doing, not the key's:
        // a failure stands on its own evidence, a pass proves nothing and is
        // not judged (skipped, so the verdict stays the failure that says why).
        let why = "not judged: the same body under a new key was not executed either (`key_not_content` failed): the target de-duplicates by content, so this replay is no evidence that the key was honoured";
        judged = judged
            .into_iter()
            .map(|a| match a.property {
                "single_effect" | "same_status" | "same_body" | "marker"
                    if a.verdict != Verdict::Fail =>
                {
                    Assertion::skipped(a.property, why)
                }
                _ => a,
            })
            .collect();
    }
    judged.push(verdict);
    Ok(r.judged(judged))
}

/// The control of `idempotency.replay`: the first request's very bytes
/// under a new key. Executed once, the key (not the content) decides what
/// is replayed. A success that executed nothing is a de-duplication by
/// content: the property fails and the second value is `true` (the
/// replay's passes are then not decided). Refused (not a success) while
/// the same key was replayed with a success, the key made the difference
/// (the target also refuses repeated content, as a unique field does).
fn key_not_content(
    r: &Run<'_>,
    first: &Counted,
    replay: &Counted,
    control: &Counted,
) -> (Assertion, bool) {
    const P: &str = "key_not_content";
    let counter = &r.plan.effects.value;
    let c = describe(&control.ex);
    let moved = format!(
        "the side-effect counter {counter} went from {} to {}",
        control.before, control.after
    );
    if control.executions == 1 {
        return (
            Assertion::pass(
                P,
                format!("the same body under a new key executed ({c}; {moved}): the key, not the content, decides what is replayed"),
            ),
            false,
        );
    }
    if first.executions == 0 {
        return (
            Assertion::not_exercised(
                P,
                format!("neither the first request nor the same body under a new key ({c}) executed ({moved}): nothing executes, so the control tells nothing"),
            ),
            false,
        );
    }
    let success = |ex: &crate::http::Exchange| r.plan.success.matches(ex.status());
    if success(&control.ex) {
        return (
            Assertion::fail(
                P,
                format!(
                    "the same body under a new key was answered {c} ({}) but not executed ({moved}): the target de-duplicates by content, so the replay with the first key proves nothing about the key (and two identical legitimate operations under two keys are merged)",
                    r.marker_text(&control.ex)
                ),
                "the same body under a new key executes (+1)",
                "not executed (de-duplicated by content)",
            ),
            true,
        );
    }
    if success(&replay.ex) && replay.executions == 0 {
        return (
            Assertion::pass(
                P,
                format!("the same body under a new key was refused ({c}) while the first key replayed ({}): the key made the difference (the target also refuses repeated content)", describe(&replay.ex)),
            ),
            false,
        );
    }
    (
        Assertion::not_exercised(
            P,
            format!("the same body under a new key was refused ({c}) and the replay was not a plain replay ({}): whether the key or the content decides cannot be told", describe(&replay.ex)),
        ),
        false,
    )
}

/// One body under two keys: two executions, two resources.
pub(super) async fn distinct(mut r: Run<'_>, id_path: Option<&JsonPath>) -> Res {
    let (k1, k2) = (r.new_key(), r.new_key());
    if k1 == k2 {
        return Err(Outcome::error(format!(
            "the key template gave `{k1}` twice: use a fresh value such as `${{uuid}}`"
        )));
    }
    let req1 = r.render(&r.ctx.target, Some(&k1));
    let mut req2 = req1.clone();
    req2.set_header(&r.plan.key_header, k2);
    let before = r.counter("counter before").await?;
    let a = r.send(&req1, "key 1").await?;
    r.require_success(&a, "key 1")?;
    let b = r.send(&req2, "key 2").await?;
    let after = r.counter("counter after").await?;
    let executed = after > before;
    let counter = r.plan.effects.value.to_string();
    let nothing = || {
        format!("the side-effect counter {counter} did not move ({before} to {after}): nothing was executed under either key")
    };
    let b_ok = r.plan.success.matches(b.status());
    let mut judged = vec![r.effect(
        "two_executions",
        (before, after),
        2,
        "one body under two different keys",
    )];
    judged.push(needs(
        executed,
        Assertion::check(
            "second_succeeds",
            b_ok,
            format!("the second key's answer {} is a success", describe(&b)),
            format!("the same body under a second key answered {}", describe(&b)),
            r.plan.success.to_string(),
            b.status().to_string(),
        ),
        nothing,
    ));
    judged.push(match id_path {
        None => Assertion::skipped("distinct_resources", "no `id_path` to compare resource ids"),
        Some(p) => match (select(&a, p), select(&b, p)) {
            (Some(ia), Some(ib)) => Assertion::check(
                "distinct_resources",
                ia != ib,
                format!("two resources: {p} = {ia} and {ib}"),
                format!("both keys returned the same resource {p} = {ia} (deduplicated by body)"),
                "two resource ids",
                "one shared id",
            ),
            (ia, ib) => Assertion::not_exercised(
                "distinct_resources",
                format!(
                    "no resource id at {p} in both answers (key 1 {}, key 2 {})",
                    ia.unwrap_or_else(|| "missing".into()),
                    ib.unwrap_or_else(|| "missing".into())
                ),
            ),
        },
    });
    let status = describe(&b);
    judged.push(needs(
        executed && b_ok,
        r.first_not_marked(&b, "second key's"),
        || format!("the second key's answer {status} is not a first execution to judge"),
    ));
    Ok(r.judged(judged))
}

/// Field names of free text an API accepts any value in: the default change
/// goes there, so the changed body stays valid (IDEM-003 tests the key, not
/// the body's validation).
const FREE_TEXT_FIELDS: &[&str] = &[
    "description",
    "memo",
    "note",
    "notes",
    "text",
    "message",
    "comment",
    "comments",
    "title",
    "name",
    "subject",
    "content",
    "body",
    "summary",
    "details",
    "reason",
    "label",
    "statement_descriptor",
];
/// Numeric fields where one more is still a valid request (a different amount
/// is the classic mismatch).
const QUANTITY_FIELDS: &[&str] = &["amount", "quantity", "qty", "count", "total", "price"];
/// Field names of codes, ids and formatted values: changing them makes a
/// validation error (`currency: "usd (changed)"` is a 422 about the currency).
const CODE_FIELDS: &[&str] = &[
    "id",
    "uuid",
    "currency",
    "type",
    "kind",
    "status",
    "state",
    "method",
    "mode",
    "country",
    "locale",
    "language",
    "lang",
    "unit",
    "category",
    "channel",
    "role",
    "scope",
    "intent",
    "format",
    "version",
    "email",
    "url",
    "uri",
    "phone",
    "date",
    "time",
    "timezone",
    "token",
    "key",
    "code",
    "sku",
    "iban",
    "bic",
    "hash",
    "source",
    "destination",
    "customer",
];

/// `name` is one of `words` or ends with one (`payment_description`,
/// `payment-description`, `paymentDescription`).
fn named(name: &str, words: &[&str]) -> bool {
    let lower = name.to_ascii_lowercase();
    words.iter().any(|w| {
        let camel = format!("{}{}", w[..1].to_ascii_uppercase(), &w[1..]);
        lower == *w
            || lower.ends_with(&format!("_{w}"))
            || lower.ends_with(&format!("-{w}"))
            || name.ends_with(&camel)
    })
}

/// A string value that reads as prose rather than a code, an id or a format.
fn looks_like_prose(v: &str) -> bool {
    let hexish = v.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    v.contains(' ') || (v.chars().count() > 16 && !hexish && !v.contains('@') && !v.contains("://"))
}

/// The default "changed" request body and what was changed: appended to a
/// free-text field, else one more of a quantity, else appended to a string
/// that reads as prose (never a code-like field such as `currency`), else a
/// field added. `None` when the body is not a JSON object.
fn mutate_body(body: &[u8]) -> Option<(Vec<u8>, String)> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    let obj = v.as_object_mut()?;
    let text = |pred: &dyn Fn(&str, &str) -> bool| {
        obj.iter()
            .find(|(k, x)| x.as_str().is_some_and(|s| pred(k, s)))
            .map(|(k, _)| k.clone())
    };
    let free_text = text(&|k, _| named(k, FREE_TEXT_FIELDS));
    let prose = text(&|k, s| !named(k, CODE_FIELDS) && looks_like_prose(s));
    let quantity = obj
        .iter()
        .find(|(k, x)| x.is_number() && named(k, QUANTITY_FIELDS))
        .map(|(k, _)| k.clone());
    let append = |obj: &mut serde_json::Map<String, Value>, k: &str| {
        let old = obj[k].as_str().unwrap_or_default().to_owned();
        obj.insert(
            k.to_owned(),
            Value::String(format!("{old} (changed by tminus)")),
        );
    };
    let what = if let Some(k) = free_text {
        append(obj, &k);
        format!("appended to the free-text field $.{k}")
    } else if let Some(k) = quantity {
        let old = obj[&k].clone();
        let more = match (old.as_i64(), old.as_f64()) {
            (Some(i), _) => Value::from(i.saturating_add(1)),
            (None, Some(f)) => Value::from(f + 1.0),
            _ => old,
        };
        obj.insert(k.clone(), more);
        format!("added one to $.{k}")
    } else if let Some(k) = prose {
        append(obj, &k);
        format!("appended to $.{k}")
    } else {
        obj.insert("tminus_mismatch".into(), Value::Bool(true));
        "added the field $.tminus_mismatch".to_owned()
    };
    Some((serde_json::to_vec(&v).ok()?, what))
}

/// IDEM-003: the same key with a changed body is rejected, not executed and
/// not answered with the first result. A 4xx counts as a mismatch rejection
/// only when the changed body is accepted on its own (sent under a new key
/// afterwards): otherwise it may be the changed body's validation error.
pub(super) async fn mismatch(
    mut r: Run<'_>,
    changed: Option<&crate::context::RequestPlan>,
    reject: &crate::model::scalar::StatusSet,
) -> Res {
    let key = r.new_key();
    let req = r.render(&r.ctx.target, Some(&key));
    let (req2, how) = match changed {
        Some(c) => {
            let mut x = r.ctx.target.render(c, &r.scope);
            x.set_header(&r.plan.key_header, key.clone());
            if x.method == req.method && x.url == req.url && x.body == req.body {
                return Err(Outcome::error(
                    "`changed:` sends the same method, URL and body as `request:`: nothing differs, so a mismatch cannot be judged",
                ));
            }
            (x, "the `changed:` request".to_owned())
        }
        None => {
            let mut x = req.clone();
            let (body, what) = mutate_body(&req.body).ok_or_else(|| {
                Outcome::error(
                    "the request body is not a JSON object, so tminus cannot change a field: give `changed:` (the second request)",
                )
            })?;
            x.body = body;
            (x, format!("the request with one change ({what})"))
        }
    };
    let before = r.counter("counter before").await?;
    let first = r.send_counted(&req, "first", "first", before).await?;
    r.require_success(&first.ex, "first")?;
    let second = r
        .send_counted(&req2, "changed body, same key", "changed", first.after)
        .await?;
    let not_executed = not_executed(&mut r, &first, &second);
    let changed_executed = not_executed.verdict == Verdict::Fail;
    let (first, after_first, second_executions) = (first.ex, first.after, second.executions);
    let second = second.ex;
    let (f, s) = (describe(&first), describe(&second));
    let success = r.plan.success.matches(second.status());
    let replayed = r.marked(&second)
        || (!second.response.body.is_empty() && second.response.body == first.response.body);
    let not_replayed = Assertion::check(
        "not_replayed",
        !replayed,
        format!("the changed body got its own answer {s}, not the first result {f}"),
        format!(
            "the same key with a different body silently replayed the first result: {s} ({}, first {f})",
            r.marker_text(&second)
        ),
        "not the first request's answer",
        "the first request's answer",
    );
    let judged = if (400..500).contains(&second.status()) {
        // Is the changed body valid on its own? Ask under a new key.
        let mut probe = req2.clone();
        probe.set_header(&r.plan.key_header, r.new_key());
        let alone = r.send(&probe, "changed body, new key").await?;
        if r.plan.success.matches(alone.status()) {
            vec![
                Assertion::pass(
                    "rejected",
                    format!(
                        "rejected with {s}; {how} under a new key was accepted ({}), so the rejection is about the reused key",
                        describe(&alone)
                    ),
                ),
                Assertion::check(
                    "reject_status",
                    reject.matches(second.status()),
                    format!("{s} is one of {reject}"),
                    format!("the mismatch was rejected with {s}, not {reject}"),
                    format!("status {reject}"),
                    format!("status {}", second.status()),
                ),
                not_executed,
                not_replayed,
            ]
        } else {
            let why = format!(
                "{how} is itself rejected under a new key ({}): the {s} may be a validation error of the changed body, so mismatch handling was not exercised; give `changed:` a second request the API accepts on its own",
                describe(&alone)
            );
            let mut out: Vec<Assertion> = ["rejected", "reject_status", "not_replayed"]
                .into_iter()
                .map(|p| Assertion::not_exercised(p, why.clone()))
                .collect();
            // A second execution is a failure whatever the body's validity.
            out.push(unless_failed(not_executed, || why));
            out
        }
    } else {
        let what = if success && replayed {
            "silently replayed the first result"
        } else if success && second_executions > 0 {
            "executed it"
        } else if success {
            "accepted it"
        } else {
            "answered with an unexpected status"
        };
        let counter = r.plan.effects.value.to_string();
        vec![
            Assertion::fail(
                "rejected",
                format!("the same key with a different body {what}: {s} (first {f})"),
                format!("a 4xx ({reject})"),
                format!("status {}", second.status()),
            ),
            Assertion::skipped("reject_status", "not judged: the mismatch was not rejected"),
            not_executed,
            // A fresh answer means something only if the target executes at all.
            if after_first > before {
                not_replayed
            } else {
                let why = format!("the side-effect counter {counter} did not move after the first request ({before} to {after_first}): nothing was executed, so there was no first result to replay");
                if changed_executed {
                    // The failure of `not_executed` says what happened.
                    Assertion::skipped("not_replayed", format!("not judged: {why}"))
                } else {
                    Assertion::not_exercised("not_replayed", why)
                }
            },
        ]
    };
    Ok(r.judged(judged))
}

/// `not_executed` of `idempotency.mismatch`, from the counter read after
/// each request: the changed body executed is a failure whatever the first
/// did; the first executed and the changed body not is a pass; neither
/// executed is not exercised (a target that de-duplicates by content answers
/// a body it has seen without executing it, so there is nothing to compare).
fn not_executed(r: &mut Run<'_>, first: &Counted, second: &Counted) -> Assertion {
    const P: &str = "not_executed";
    r.props.push(prop("first_executions", first.executions));
    r.props.push(prop("changed_executions", second.executions));
    let counter = &r.plan.effects.value;
    let (b, f, a) = (first.before, first.after, second.after);
    let reads = format!(
        "the side-effect counter {counter} went from {b} to {f} after the first request and to {a} after the changed one"
    );
    if second.executions > 0 {
        let first_did = if first.executions == 0 {
            " (the first executed nothing: the changed body's execution is not the first's)"
        } else {
            ""
        };
        return Assertion::fail(
            P,
            format!(
                "a key reused with a different body: the changed body executed: {reads}{first_did}"
            ),
            "the changed body not executed",
            format!(
                "executed (first {}, changed {})",
                first.executions, second.executions
            ),
        );
    }
    if first.executions == 0 {
        return Assertion::not_exercised(
            P,
            format!("a key reused with a different body: {reads}: the first request executed nothing (a target that de-duplicates by content answers a body it has seen without executing it), so there is no execution to tell the changed body's from"),
        );
    }
    Assertion::pass(
        P,
        format!("a key reused with a different body: {reads}: the first executed, the changed body did not"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mutated(body: serde_json::Value) -> (Value, String) {
        let (out, what) = mutate_body(body.to_string().as_bytes()).unwrap();
        (serde_json::from_slice(&out).unwrap(), what)
    }

    /// The default change stays valid: free text first, never a code.
    #[test]
    fn mutates_a_field_that_stays_valid() {
        let (v, what) =
            mutated(json!({"currency": "usd", "amount": 1000, "description": "Order 7"}));
        assert_eq!(v["description"], "Order 7 (changed by tminus)");
        assert_eq!(
            (v["currency"].clone(), v["amount"].clone()),
            (json!("usd"), json!(1000))
        );
        assert!(what.contains("$.description"), "{what}");
        // A payments body without free text: the amount, never the currency.
        let (v, what) = mutated(json!({"currency": "usd", "amount": 1000}));
        assert_eq!(
            (v["currency"].clone(), v["amount"].clone()),
            (json!("usd"), json!(1001))
        );
        assert!(what.contains("$.amount"), "{what}");
        let (v, _) = mutated(json!({"contact_id": 1, "text": "hi"}));
        assert_eq!(v["text"], "hi (changed by tminus)");
        let (v, _) = mutated(json!({"paymentMemo": "rent", "kind": "card"}));
        assert_eq!(v["paymentMemo"], "rent (changed by tminus)");
        // Prose in a field of no known name; codes and ids left alone.
        let (v, _) =
            mutated(json!({"country": "FR", "customer_id": "cus 1", "remark": "for the flat"}));
        assert_eq!(v["remark"], "for the flat (changed by tminus)");
        assert_eq!(
            (v["country"].clone(), v["customer_id"].clone()),
            (json!("FR"), json!("cus 1"))
        );
        let (v, what) = mutated(json!({"currency": "eur", "source": "tok_visa"}));
        assert_eq!(v["tminus_mismatch"], true);
        assert_eq!(v["currency"], "eur");
        assert!(what.contains("added"), "{what}");
        assert!(mutate_body(b"[1]").is_none());
    }
}
