//! The HTML report's contract section: per suite with `contract:`, every
//! operation of its OpenAPI document with the responses seen and how many
//! conformed, and the paths answered that no operation describes. An
//! operation no check reached is listed too (0 seen): the table doubles as
//! the suite's coverage of the document.

use std::fmt::Write;

use crate::model::contract::ContractSummary;

/// The section, or nothing when no suite had a contract. `esc` escapes (and
/// redacts) text for HTML.
pub fn section(summaries: &[ContractSummary], esc: &dyn Fn(&str) -> String) -> String {
    if summaries.is_empty() {
        return String::new();
    }
    let mut h = String::from("<section class=\"contract\"><h2>Contract</h2>");
    for s in summaries {
        let seen: u64 = s.operations.iter().map(|o| o.seen).sum();
        let conforming: u64 = s.operations.iter().map(|o| o.conforming).sum();
        let reached = s.operations.iter().filter(|o| o.seen > 0).count();
        let _ = write!(
            h,
            "<h3>{} against {} (OpenAPI {})</h3><p>{conforming} of {seen} responses conform; {reached} of {} operations reached.</p>\
             <table><thead><tr><th>operation</th><th>method</th><th>path</th><th>seen</th><th>conforming</th></tr></thead><tbody>",
            esc(&s.suite),
            esc(&s.document),
            esc(&s.openapi),
            s.operations.len()
        );
        for o in &s.operations {
            let class = if o.seen == 0 {
                "skipped"
            } else if o.conforming == o.seen {
                "pass"
            } else {
                "fail"
            };
            let _ = write!(
                h,
                "<tr class=\"{class}\"><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                esc(&o.operation),
                esc(&o.method),
                esc(&o.path),
                o.seen,
                o.conforming
            );
        }
        h.push_str("</tbody></table>");
        if !s.undocumented_paths.is_empty() {
            h.push_str("<p>Answered, but described by no operation:</p><ul>");
            for p in &s.undocumented_paths {
                let _ = write!(h, "<li><code>{}</code></li>", esc(p));
            }
            h.push_str("</ul>");
        }
    }
    h.push_str("</section>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::contract::OperationTally;

    #[test]
    fn operations_with_their_counts_and_undocumented_paths() {
        let s = ContractSummary {
            suite: "api".into(),
            document: "openapi.yaml".into(),
            openapi: "3.1.0".into(),
            operations: vec![
                OperationTally {
                    operation: "listPets".into(),
                    method: "GET".into(),
                    path: "/pets".into(),
                    seen: 3,
                    conforming: 2,
                },
                OperationTally {
                    operation: "addPet".into(),
                    method: "POST".into(),
                    path: "/pets".into(),
                    seen: 0,
                    conforming: 0,
                },
            ],
            undocumented_paths: vec!["/pets/<x>".into()],
        };
        let esc = |t: &str| t.replace('<', "&lt;").replace('>', "&gt;");
        let h = section(&[s], &esc);
        assert!(
            h.contains("2 of 3 responses conform; 1 of 2 operations reached"),
            "{h}"
        );
        assert!(h.contains("<tr class=\"fail\"><td>listPets</td>"), "{h}");
        assert!(h.contains("<tr class=\"skipped\"><td>addPet</td>"), "{h}");
        assert!(h.contains("<code>/pets/&lt;x&gt;</code>"), "{h}");
        assert_eq!(section(&[], &esc), "");
    }
}
