//! POLL-001, `polling.cursor_walk`: the list is walked to its end twice, the
//! first time undisturbed (the items that exist at the start), the second
//! time with an insert after each of the first pages; then no item may be
//! seen twice in a walk, none of the first walk's (nor a seeded one) may be
//! missing from the second, and both walks must end on an empty cursor.
//!
//! The walk itself (`walk_list`) is shared with POLL-002, which polls an
//! event list. It is bounded by `max_pages` and stops at the first cursor
//! that comes back, so an endless or looping cursor is a finding with its
//! page count, never a hang.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::plan::{CursorWalkPlan, ListPlan};
use crate::context::{CheckContext, RequestPlan, Scope};
use crate::families::common::{describe, evidence, send_plan};
use crate::model::jsonpath::JsonPath;
use crate::outcome::{prop, Assertion, Evidence, Outcome};

/// How a walk ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// A page without a next cursor.
    Done,
    /// Still a cursor after `max_pages` pages.
    Endless { last: String },
    /// Page `again` handed out the cursor page `first` had handed out.
    Loop {
        cursor: String,
        first: usize,
        again: usize,
    },
}

/// What one walk saw: the item ids page by page (1-based page numbers in
/// messages) and how it ended.
#[derive(Debug, Clone)]
pub struct Walk {
    pub pages: Vec<Vec<String>>,
    pub end: End,
    /// Inserts sent during the walk.
    pub inserted: u64,
}

impl Walk {
    /// Every id with the pages it was on, for the ids seen more than once.
    pub fn duplicates(&self) -> BTreeMap<&str, Vec<usize>> {
        let mut on: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, page) in self.pages.iter().enumerate() {
            for id in page {
                on.entry(id.as_str()).or_default().push(i + 1);
            }
        }
        on.into_iter().filter(|(_, p)| p.len() > 1).collect()
    }

    pub fn ids(&self) -> BTreeSet<&str> {
        self.pages.iter().flatten().map(String::as_str).collect()
    }

    pub fn items(&self) -> usize {
        self.pages.iter().map(Vec::len).sum()
    }

    /// Why the walk did not end, for a message; `None` when it did.
    pub fn not_ended(&self, name: &str) -> Option<String> {
        match &self.end {
            End::Done => None,
            End::Endless { last } => Some(format!(
                "{name} still had a next cursor after {} pages (the last `{}`): the cursor never ends",
                self.pages.len(),
                crate::families::common::clip(last)
            )),
            End::Loop {
                cursor,
                first,
                again,
            } => Some(format!(
                "{name}: page {again} handed out the cursor `{}` page {first} had handed out, so the walk loops ({} pages)",
                crate::families::common::clip(cursor),
                self.pages.len()
            )),
        }
    }
}

/// An id as text: strings as they are, numbers in JSON form; `None` for
/// anything that cannot be an id.
pub fn id_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Every id a JSON path selects: one id, or each of a list.
pub fn ids_at(path: &JsonPath, doc: &serde_json::Value) -> Vec<String> {
    match path.select(doc) {
        Some(serde_json::Value::Array(a)) => a.iter().filter_map(id_text).collect(),
        Some(v) => id_text(&v).into_iter().collect(),
        None => Vec::new(),
    }
}

/// The next cursor of a page: `Ok(None)` on the last page (null, absent or
/// empty), an error for a value that cannot be a cursor.
fn next_cursor(list: &ListPlan, doc: &serde_json::Value) -> Result<Option<String>, String> {
    match list.next_cursor.select(doc) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) if s.is_empty() => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(serde_json::Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(format!(
            "{} holds {}, which is not a cursor (a string, a number, or null on the last page)",
            list.next_cursor,
            crate::families::common::clip(&other.to_string())
        )),
    }
}

/// Inserts made during a walk: after each of the first `count` pages that
/// have a next page, `request` is sent.
pub struct Inserts<'a> {
    pub request: &'a RequestPlan,
    pub count: u64,
}

/// Walks `list` from its first page to its end (bounded by `max_pages`).
/// Evidence: the first and the last page, and the first insert.
pub async fn walk_list(
    ctx: &CheckContext,
    list: &ListPlan,
    scope: &Scope,
    name: &str,
    inserts: Option<Inserts<'_>>,
    evidence_out: &mut Vec<Evidence>,
) -> Result<Walk, Outcome> {
    let mut walk = Walk {
        pages: Vec::new(),
        end: End::Done,
        inserted: 0,
    };
    let mut cursor: Option<String> = None;
    // Which page handed out each cursor, to see one come back.
    let mut handed: HashMap<String, usize> = HashMap::new();
    let mut last_ev: Option<Evidence>;
    loop {
        let page_no = walk.pages.len() + 1;
        let label = format!("{name}, page {page_no}");
        let mut r = ctx.target.render(&list.request, scope);
        if let Some(c) = &cursor {
            r.url.push(if r.url.contains('?') { '&' } else { '?' });
            r.url.push_str(&format!(
                "{}={}",
                crate::http::encode(&list.cursor_param),
                crate::http::encode(c)
            ));
        }
        let ex = crate::families::common::send(ctx, &r, &label)
            .await
            .map_err(|o| o.with_evidence(evidence_out.clone()))?;
        let ev = evidence(&label, &ex);
        if page_no == 1 {
            evidence_out.push(ev.clone());
        }
        let fail = |msg: String, ev: Evidence, out: &[Evidence]| {
            let mut all = out.to_vec();
            all.push(ev);
            Outcome::error(msg).with_evidence(all)
        };
        if !(200..300).contains(&ex.status()) {
            return Err(fail(
                format!(
                    "{label} answered {}: the list cannot be walked",
                    describe(&ex)
                ),
                ev,
                evidence_out,
            ));
        }
        let Some(doc) = ex.response.json() else {
            return Err(fail(
                format!("{label}: the answer is not JSON"),
                ev,
                evidence_out,
            ));
        };
        let items = match list.items.select(&doc) {
            Some(serde_json::Value::Array(a)) => a,
            other => {
                return Err(fail(
                    format!(
                        "{label}: {} is {}, not a list of items",
                        list.items,
                        other.map_or("missing".into(), |v| crate::families::common::clip(
                            &v.to_string()
                        ))
                    ),
                    ev,
                    evidence_out,
                ))
            }
        };
        let mut ids = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match list.item_id.select(item).as_ref().and_then(id_text) {
                Some(id) => ids.push(id),
                None => {
                    return Err(fail(
                        format!(
                            "{label}: item {} has no id at {} (set `item_id`)",
                            i + 1,
                            list.item_id
                        ),
                        ev,
                        evidence_out,
                    ))
                }
            }
        }
        walk.pages.push(ids);
        let next = match next_cursor(list, &doc) {
            Ok(n) => n,
            Err(e) => return Err(fail(format!("{label}: {e}"), ev, evidence_out)),
        };
        last_ev = Some(ev);
        let Some(next) = next else {
            walk.end = End::Done;
            break;
        };
        if let Some(first) = handed.insert(next.clone(), page_no) {
            walk.end = End::Loop {
                cursor: next,
                first,
                again: page_no,
            };
            break;
        }
        if page_no as u64 >= list.max_pages {
            walk.end = End::Endless { last: next };
            break;
        }
        if let Some(ins) = inserts.as_ref().filter(|i| walk.inserted < i.count) {
            let label = format!("{name}, insert after page {page_no}");
            let ex = send_plan(ctx, &ctx.target, ins.request, scope, &label)
                .await
                .map_err(|o| o.with_evidence(evidence_out.clone()))?;
            if walk.inserted == 0 {
                evidence_out.push(evidence(&label, &ex));
            }
            if !(200..300).contains(&ex.status()) {
                return Err(Outcome::error(format!(
                    "{label} answered {}: the target did not take the insert, so the walk under inserts cannot be judged",
                    describe(&ex)
                ))
                .with_evidence(evidence_out.clone()));
            }
            walk.inserted += 1;
        }
        cursor = Some(next);
    }
    if walk.pages.len() > 1 {
        evidence_out.extend(last_ev);
    }
    Ok(walk)
}

/// At most ten items of a list, for a message.
fn some<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let all: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    if all.len() > 10 {
        format!("{} … ({} in all)", all[..10].join(", "), all.len())
    } else {
        all.join(", ")
    }
}

pub async fn run(p: &CursorWalkPlan, ctx: &CheckContext) -> Outcome {
    let scope = Scope::new();
    let mut ev = Vec::new();
    // Seeding: items of the check's own, known to exist before both walks.
    let mut seeded: BTreeSet<String> = BTreeSet::new();
    for i in 0..p.seed {
        let label = format!("seed {}", i + 1);
        let ex = match send_plan(ctx, &ctx.target, &p.insert, &scope, &label).await {
            Ok(ex) => ex,
            Err(o) => return o.with_evidence(ev),
        };
        if i == 0 {
            ev.push(evidence(&label, &ex));
        }
        if !(200..300).contains(&ex.status()) {
            return Outcome::error(format!(
                "{label} answered {}: the target did not take the insert",
                describe(&ex)
            ))
            .with_evidence(ev);
        }
        let ids = ex
            .response
            .json()
            .map(|d| ids_at(&p.seed_ids, &d))
            .unwrap_or_default();
        if ids.is_empty() {
            return Outcome::error(format!(
                "{label}: {} names no created id in the answer (set `seed_ids`)",
                p.seed_ids
            ))
            .with_evidence(ev);
        }
        seeded.extend(ids);
    }
    if p.seed > 0 {
        ctx.note(format!("seeded {} item(s)", seeded.len()));
    }
    let first = match walk_list(ctx, &p.list, &scope, "walk 1", None, &mut ev).await {
        Ok(w) => w,
        Err(o) => return o,
    };
    if first.end == End::Done && first.pages.len() < 2 {
        return Outcome::error(format!(
            "walk 1 found {} item(s) on one page: with no second page, no cursor was walked; ask for a smaller page in `request` (`query: {{limit: 5}}`) or more `seed`",
            first.items()
        ))
        .with_evidence(ev);
    }
    ctx.note(format!(
        "walk 1: {} item(s) on {} page(s); walking again with {} insert(s)",
        first.items(),
        first.pages.len(),
        p.inserts
    ));
    let inserts = Inserts {
        request: &p.insert,
        count: p.inserts,
    };
    let second = match walk_list(ctx, &p.list, &scope, "walk 2", Some(inserts), &mut ev).await {
        Ok(w) => w,
        Err(o) => return o,
    };
    let props = vec![
        prop("walk1_pages", first.pages.len()),
        prop("walk1_items", first.items()),
        prop("walk2_pages", second.pages.len()),
        prop("walk2_items", second.items()),
        prop("inserted", second.inserted),
    ];
    Outcome::judged(judge(&first, &second, &seeded, p.list.max_pages))
        .with_evidence(ev)
        .with_properties(props)
}

/// The three properties from the two walks (pure, for the unit tests).
pub fn judge(
    first: &Walk,
    second: &Walk,
    seeded: &BTreeSet<String>,
    max_pages: u64,
) -> Vec<Assertion> {
    let stuck: Vec<String> = [("walk 1", first), ("walk 2", second)]
        .iter()
        .filter_map(|(n, w)| w.not_ended(n))
        .collect();
    let terminates = if stuck.is_empty() {
        Assertion::pass(
            "terminates",
            format!(
                "both walks ended on an empty cursor ({} and {} pages, at most {max_pages})",
                first.pages.len(),
                second.pages.len()
            ),
        )
    } else {
        Assertion::fail(
            "terminates",
            stuck.join("; "),
            format!("a page without a next cursor within {max_pages} pages"),
            format!(
                "{} and {} pages without an end",
                first.pages.len(),
                second.pages.len()
            ),
        )
    };
    if !stuck.is_empty() {
        let why = "not judged: a walk did not end (see `terminates`)";
        return vec![
            terminates,
            Assertion::skipped("no_duplicates", why),
            Assertion::skipped("no_gaps", why),
        ];
    }
    let mut dups = Vec::new();
    for (name, w) in [("walk 1", first), ("walk 2 (under inserts)", second)] {
        let d = w.duplicates();
        if !d.is_empty() {
            dups.push(format!(
                "{name} saw {} item(s) twice: {}",
                d.len(),
                some(
                    d.iter()
                        .map(|(id, pages)| format!("{id} on pages {}", some(pages.iter())))
                )
            ));
        }
    }
    let no_duplicates = if dups.is_empty() {
        Assertion::pass(
            "no_duplicates",
            format!(
                "no item twice in either walk ({} and {} items)",
                first.items(),
                second.items()
            ),
        )
    } else {
        Assertion::fail(
            "no_duplicates",
            dups.join("; "),
            "each item once per walk",
            "repeated items",
        )
    };
    let (ids1, ids2) = (first.ids(), second.ids());
    let missing1: Vec<&str> = seeded
        .iter()
        .map(String::as_str)
        .filter(|id| !ids1.contains(id))
        .collect();
    let missing2: Vec<&str> = ids1
        .iter()
        .copied()
        .chain(seeded.iter().map(String::as_str))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|id| !ids2.contains(id))
        .collect();
    let mut gaps = Vec::new();
    if !missing1.is_empty() {
        gaps.push(format!(
            "walk 1 missed {} seeded item(s): {}",
            missing1.len(),
            some(missing1.iter())
        ));
    }
    if !missing2.is_empty() {
        gaps.push(format!(
            "walk 2, with {} insert(s) during it, missed {} item(s) that existed before it started: {}",
            second.inserted,
            missing2.len(),
            some(missing2.iter())
        ));
    }
    let no_gaps = if gaps.is_empty() {
        Assertion::pass(
            "no_gaps",
            format!(
                "walk 2 saw all {} item(s) that existed at its start, with {} insert(s) during it",
                ids1.len(),
                second.inserted
            ),
        )
    } else {
        Assertion::fail(
            "no_gaps",
            gaps.join("; "),
            "every item that existed at the start",
            format!("{} missing", missing1.len() + missing2.len()),
        )
    };
    vec![terminates, no_duplicates, no_gaps]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(pages: &[&[&str]], end: End) -> Walk {
        Walk {
            pages: pages
                .iter()
                .map(|p| p.iter().map(|s| s.to_string()).collect())
                .collect(),
            end,
            inserted: 1,
        }
    }

    fn verdicts(a: &[Assertion]) -> Vec<(&str, &str)> {
        a.iter().map(|a| (a.property, a.verdict.as_str())).collect()
    }

    #[test]
    fn a_clean_pair_of_walks_passes() {
        let w1 = walk(&[&["1", "2"], &["3"]], End::Done);
        let w2 = walk(&[&["1", "2"], &["3", "4"]], End::Done);
        let a = judge(&w1, &w2, &["2".into()].into(), 10);
        assert!(a.iter().all(|a| a.verdict.as_str() == "pass"), "{a:?}");
    }

    #[test]
    fn a_skipped_item_is_a_gap_and_only_a_gap() {
        let w1 = walk(&[&["1", "2"], &["3", "4"]], End::Done);
        let w2 = walk(&[&["1", "2"], &["4", "5"]], End::Done);
        let a = judge(&w1, &w2, &BTreeSet::new(), 10);
        assert_eq!(
            verdicts(&a),
            [
                ("terminates", "pass"),
                ("no_duplicates", "pass"),
                ("no_gaps", "fail")
            ]
        );
        assert!(
            a[2].message
                .contains("missed 1 item(s) that existed before it started: 3"),
            "{}",
            a[2].message
        );
    }

    #[test]
    fn a_repeated_page_is_a_duplicate() {
        let w1 = walk(&[&["1"], &["2"], &["2"], &["3"]], End::Done);
        let a = judge(&w1, &w1.clone(), &BTreeSet::new(), 10);
        assert_eq!(
            verdicts(&a),
            [
                ("terminates", "pass"),
                ("no_duplicates", "fail"),
                ("no_gaps", "pass")
            ]
        );
        assert!(a[1].message.contains("2 on pages 2, 3"), "{}", a[1].message);
    }

    #[test]
    fn a_loop_fails_terminates_with_the_page_count_and_judges_nothing_else() {
        let w1 = walk(&[&["1"], &["2"]], End::Done);
        let w2 = walk(
            &[&["1"], &["2"], &["2"]],
            End::Loop {
                cursor: "c2".into(),
                first: 2,
                again: 3,
            },
        );
        let a = judge(&w1, &w2, &BTreeSet::new(), 10);
        assert_eq!(
            verdicts(&a),
            [
                ("terminates", "fail"),
                ("no_duplicates", "skipped"),
                ("no_gaps", "skipped")
            ]
        );
        assert!(
            a[0].message
                .contains("page 3 handed out the cursor `c2` page 2 had"),
            "{}",
            a[0].message
        );
        let endless = walk(&[&["1"] as &[&str]; 10], End::Endless { last: "x".into() });
        let a = judge(&w1, &endless, &BTreeSet::new(), 10);
        assert!(a[0].message.contains("after 10 pages"), "{}", a[0].message);
    }
}
