//! What a document says about an operation's retirement (catalogue
//! CON-005): `deprecated: true` (OpenAPI 3.x operation object) and the date
//! it stops being served, `x-sunset` (the extension Zalando's API guidelines
//! and several gateways use; OpenAPI has no standard field for it). The
//! `contract.deprecation` check reads this to know which answers must carry
//! `Deprecation` (RFC 9745) and `Sunset` (RFC 8594), and with which date.

use std::time::{Duration, SystemTime};

use serde_json::Value;

/// A deprecated operation's documented retirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deprecated {
    /// `x-sunset` as written and read; `None` when the document gives none.
    pub sunset: Option<Result<DocDate, String>>,
}

/// A date the document gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocDate {
    /// Seconds since the Unix epoch (of midnight UTC for a date alone).
    pub unix: i64,
    /// Written as a date without a time (`2027-06-30`): any time of that
    /// day (UTC) is the documented date.
    pub day_only: bool,
}

impl DocDate {
    /// The date as a message shows it: an HTTP-date, or the day alone.
    pub fn show(self) -> String {
        if self.day_only {
            let d = http_date(self.unix);
            // `Wed, 30 Jun 2027 00:00:00 GMT` -> `Wed, 30 Jun 2027 (any time of that day, GMT)`
            format!(
                "{} (any time of that day, GMT)",
                d.trim_end_matches(" 00:00:00 GMT")
            )
        } else {
            http_date(self.unix)
        }
    }

    /// Whether `at` (seconds since the epoch) is this date: the same second,
    /// or any second of the day for a date written without a time.
    pub fn matches(self, at: i64) -> bool {
        if self.day_only {
            (self.unix..self.unix + 86_400).contains(&at)
        } else {
            at == self.unix
        }
    }
}

/// The operation object's retirement, if it is `deprecated: true`.
pub fn of_operation(op: &Value) -> Option<Deprecated> {
    if op.get("deprecated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    let sunset = op.get("x-sunset").map(|v| match v.as_str() {
        Some(s) => parse_doc_date(s),
        None => Err(format!("x-sunset is {v}, not a date string")),
    });
    Some(Deprecated { sunset })
}

/// `2027-06-30`, `2027-06-30T23:59:59Z` (RFC 3339) or an HTTP-date
/// (`Wed, 30 Jun 2027 23:59:59 GMT`).
pub fn parse_doc_date(s: &str) -> Result<DocDate, String> {
    use time::format_description::well_known::Rfc3339;
    let t = s.trim();
    if let Ok(dt) = time::OffsetDateTime::parse(t, &Rfc3339) {
        return Ok(DocDate {
            unix: dt.unix_timestamp(),
            day_only: false,
        });
    }
    if let Ok(d) = time::Date::parse(t, &time::format_description::well_known::Iso8601::DATE) {
        return Ok(DocDate {
            unix: d.midnight().assume_utc().unix_timestamp(),
            day_only: true,
        });
    }
    if let Ok(st) = httpdate::parse_http_date(t) {
        return Ok(DocDate {
            unix: unix_of(st),
            day_only: false,
        });
    }
    Err(format!(
        "x-sunset `{t}` is not a date (an RFC 3339 date or date-time, or an HTTP-date)"
    ))
}

/// Seconds since the epoch of `t` (negative before it).
pub fn unix_of(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// The HTTP-date (IMF-fixdate) of `unix`, for messages.
pub fn http_date(unix: i64) -> String {
    let t = if unix >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_secs(unix.unsigned_abs())
    } else {
        SystemTime::UNIX_EPOCH - Duration::from_secs(unix.unsigned_abs())
    };
    httpdate::fmt_http_date(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_deprecated_and_the_sunset_in_three_spellings() {
        assert_eq!(of_operation(&json!({"responses": {}})), None);
        assert_eq!(of_operation(&json!({"deprecated": false})), None);
        assert_eq!(
            of_operation(&json!({"deprecated": true})),
            Some(Deprecated { sunset: None })
        );
        let day = parse_doc_date("2027-06-30").unwrap();
        assert_eq!(
            day,
            DocDate {
                unix: 1_814_313_600,
                day_only: true
            }
        );
        assert!(day.matches(1_814_313_600 + 86_399) && !day.matches(1_814_313_600 + 86_400));
        assert_eq!(day.show(), "Wed, 30 Jun 2027 (any time of that day, GMT)");
        let instant = parse_doc_date("2027-06-30T23:59:59Z").unwrap();
        assert_eq!(instant.unix, 1_814_399_999);
        assert_eq!(
            parse_doc_date("Wed, 30 Jun 2027 23:59:59 GMT").unwrap(),
            instant
        );
        assert_eq!(http_date(instant.unix), "Wed, 30 Jun 2027 23:59:59 GMT");
        let bad = of_operation(&json!({"deprecated": true, "x-sunset": "soon"})).unwrap();
        assert!(bad
            .sunset
            .unwrap()
            .unwrap_err()
            .contains("`soon` is not a date"));
        let num = of_operation(&json!({"deprecated": true, "x-sunset": 5})).unwrap();
        assert!(num
            .sunset
            .unwrap()
            .unwrap_err()
            .contains("not a date string"));
    }
}
