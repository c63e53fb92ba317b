//! Reading a `/metrics` page (Prometheus' text exposition format 0.0.4,
//! which OpenMetrics text also reads as) without a Prometheus: a series of
//! `observe.series` (the load family) or a RED series of
//! `observability.red_metrics` is a selector, `name` or `name{label="v",other!="w"}`,
//! and its value is the sum of the samples it matches, as PromQL's
//! `sum(name{...})` would be.

/// A parsed selector.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    pub name: String,
    /// (label, value, equal): `=` when true, `!=` when false.
    pub matchers: Vec<(String, String, bool)>,
}

fn metric_name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Parses `name` or `name{label="v",...}`.
pub fn parse_selector(text: &str) -> Result<Selector, String> {
    let t = text.trim();
    let (name, rest) = match t.find('{') {
        Some(i) => (&t[..i], Some(&t[i..])),
        None => (t, None),
    };
    if !metric_name_ok(name) {
        return Err(format!(
            "`{t}` is not a metric selector: with `metrics:`, a series is a metric name with optional labels, `name{{label=\"value\"}}` (PromQL needs `prometheus:`)"
        ));
    }
    let mut matchers = Vec::new();
    if let Some(rest) = rest {
        let inner = rest
            .strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .ok_or_else(|| format!("`{t}`: the labels must end with `}}`"))?;
        let labels =
            parse_labels(inner).map_err(|e| format!("`{t}`: {e} (write `label=\"value\"`)"))?;
        for (k, v, eq) in labels {
            matchers.push((k, v, eq));
        }
    }
    Ok(Selector {
        name: name.to_owned(),
        matchers,
    })
}

/// `a="1",b!="2"` (a trailing comma allowed, as in the format).
fn parse_labels(s: &str) -> Result<Vec<(String, String, bool)>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let end = rest
            .find(['=', '!'])
            .ok_or_else(|| format!("no `=` after `{rest}`"))?;
        let key = rest[..end].trim();
        if !metric_name_ok(key) || key.contains(':') {
            return Err(format!("`{key}` is not a label name"));
        }
        rest = &rest[end..];
        let eq = !rest.starts_with("!=");
        rest = rest
            .strip_prefix("!=")
            .or_else(|| rest.strip_prefix('='))
            .unwrap_or(rest)
            .trim_start();
        rest = rest
            .strip_prefix('"')
            .ok_or_else(|| format!("the value of `{key}` must be quoted"))?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let close = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err("a label value ends in `\\`".into()),
                },
                Some((_, c)) => value.push(c),
                None => return Err(format!("the value of `{key}` is not closed")),
            }
        };
        out.push((key.to_owned(), value, eq));
        rest = rest[close + 1..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Ok(out)
}

/// The sum of the samples `sel` matches on the page, and how many matched;
/// None when none did.
pub fn read(page: &str, sel: &Selector) -> Option<(f64, usize)> {
    let mut sum = 0.0;
    let mut n = 0;
    for line in page.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(rest) = line.strip_prefix(sel.name.as_str()) else {
            continue;
        };
        let (labels, value) = if let Some(r) = rest.strip_prefix('{') {
            let Some(close) = r.rfind('}') else { continue };
            (&r[..close], &r[close + 1..])
        } else if rest.starts_with([' ', '\t']) {
            ("", rest)
        } else {
            // Another metric sharing the prefix (`name_total` for `name`).
            continue;
        };
        let Ok(labels) = parse_labels(labels) else {
            continue;
        };
        let matches = sel.matchers.iter().all(|(k, v, eq)| {
            let have = labels
                .iter()
                .find(|(l, _, _)| l == k)
                .map_or("", |(_, x, _)| x.as_str());
            (have == v) == *eq
        });
        if !matches {
            continue;
        }
        // `value [timestamp]`; Prometheus writes +Inf, -Inf and NaN.
        let Some(v) = value.split_whitespace().next() else {
            continue;
        };
        let v = match v {
            "+Inf" | "Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            other => match other.parse::<f64>() {
                Ok(x) => x,
                Err(_) => continue,
            },
        };
        sum += v;
        n += 1;
    }
    (n > 0).then_some((sum, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# HELP q Queue.\n# TYPE q gauge\nq{pool=\"a\"} 3\nq{pool=\"b\",zone=\"x\"} 4 1700000000000\nq_total 99\nother 1\nq{pool=\"c\\\"d\"} 5\n";

    #[test]
    fn a_selector_sums_the_series_it_matches() {
        let all = parse_selector("q").unwrap();
        assert_eq!(read(PAGE, &all), Some((12.0, 3)));
        let a = parse_selector("q{pool=\"a\"}").unwrap();
        assert_eq!(read(PAGE, &a), Some((3.0, 1)));
        let not_a = parse_selector("q{pool!=\"a\"}").unwrap();
        assert_eq!(read(PAGE, &not_a), Some((9.0, 2)));
        let quoted = parse_selector(r#"q{pool="c\"d"}"#).unwrap();
        assert_eq!(read(PAGE, &quoted), Some((5.0, 1)));
        let total = parse_selector("q_total").unwrap();
        assert_eq!(read(PAGE, &total), Some((99.0, 1)));
        assert_eq!(read(PAGE, &parse_selector("missing").unwrap()), None);
    }

    #[test]
    fn selectors_that_are_not_refuse_with_a_reason() {
        assert!(parse_selector("sum(q)")
            .unwrap_err()
            .contains("PromQL needs `prometheus:`"));
        assert!(parse_selector("q{pool=a}")
            .unwrap_err()
            .contains("must be quoted"));
        assert!(parse_selector("q{pool=\"a\"")
            .unwrap_err()
            .contains("end with"));
    }
}
