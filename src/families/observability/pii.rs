//! Personal data in a request body: the values at the suite's `pii:` paths,
//! and (with `detect`) every card number (13 to 19 digits, spaces or dashes
//! between, Luhn-valid) and email address among the body's values. Each is
//! named by what it is (`$.card.number`, `a card number`), never printed.

use crate::model::jsonpath::JsonPath;

/// The shortest value looked for: anything shorter matches by chance.
const MIN_LEN: usize = 4;

/// What a personal value is, and the value (for searching only).
pub fn values(
    body: &serde_json::Value,
    pii: &[(String, JsonPath)],
    detect: bool,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |what: String, v: String| {
        if v.chars().count() >= MIN_LEN && !v.contains("${") && !out.iter().any(|(_, x)| *x == v) {
            out.push((what, v));
        }
    };
    for (name, path) in pii {
        match path.select(body) {
            Some(serde_json::Value::String(s)) => push(format!("`{name}`"), s),
            Some(serde_json::Value::Number(n)) => push(format!("`{name}`"), n.to_string()),
            _ => {}
        }
    }
    if detect {
        let mut leaves = Vec::new();
        scalars(body, &mut leaves);
        for v in leaves {
            if is_card_number(&v) {
                push("a card number".into(), v);
            } else if is_email(&v) {
                push("an email address".into(), v);
            }
        }
    }
    out
}

fn scalars(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Number(n) => out.push(n.to_string()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| scalars(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| scalars(x, out)),
        _ => {}
    }
}

/// The digits of a card number written with optional spaces or dashes.
fn card_digits(s: &str) -> Option<String> {
    let s = s.trim();
    if s.is_empty()
        || !s
            .chars()
            .all(|c| c.is_ascii_digit() || c == ' ' || c == '-')
    {
        return None;
    }
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    (13..=19).contains(&digits.len()).then_some(digits)
}

/// A Luhn-valid number of 13 to 19 digits.
pub fn is_card_number(s: &str) -> bool {
    card_digits(s).is_some_and(|d| luhn(&d))
}

pub fn luhn(digits: &str) -> bool {
    let mut sum = 0u32;
    for (i, c) in digits.bytes().rev().enumerate() {
        let mut x = u32::from(c - b'0');
        if i % 2 == 1 {
            x *= 2;
            if x > 9 {
                x -= 9;
            }
        }
        sum += x;
    }
    sum.is_multiple_of(10)
}

/// `local@domain.tld`, without spaces.
pub fn is_email(s: &str) -> bool {
    let s = s.trim();
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !s.contains(char::is_whitespace)
        && !domain.contains('@')
        && domain.split('.').count() >= 2
        && domain.split('.').all(|p| !p.is_empty())
}

/// Whether `line` holds `value`; a card number also when its digits appear
/// with other separators (or none) between them.
pub fn appears(line: &str, value: &str) -> bool {
    if line.contains(value) {
        return true;
    }
    match card_digits(value) {
        Some(d) => {
            let squeezed: String = line.chars().filter(|c| *c != ' ' && *c != '-').collect();
            squeezed.contains(&d)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_and_emails() {
        assert!(is_card_number("4242 4242 4242 4242"));
        assert!(is_card_number("5555-5555-5555-4444"));
        assert!(!is_card_number("4242 4242 4242 4241"));
        assert!(!is_card_number("12345"));
        assert!(is_email("ada@example.com"));
        assert!(!is_email("not an@email.com"));
        assert!(!is_email("a@b"));
    }

    #[test]
    fn values_are_named_not_shown_and_cards_match_in_any_spacing() {
        let body = serde_json::json!({
            "amount": 100,
            "card": {"number": "4242424242424242", "cvc": "123"},
            "customer": {"email": "ada@example.com", "phone": "+1 555 0100"}
        });
        let pii = vec![(
            "$.customer.phone".to_owned(),
            JsonPath::parse("$.customer.phone").unwrap(),
        )];
        let v = values(&body, &pii, true);
        let names: Vec<&str> = v.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(
            names,
            ["`$.customer.phone`", "a card number", "an email address"]
        );
        assert!(appears("card=4242 4242 4242 4242", "4242424242424242"));
        assert!(!appears("card=4242 **** **** 4242", "4242424242424242"));
        assert!(values(&body, &[], false).is_empty());
    }
}
