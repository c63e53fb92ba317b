//! `Retry-After` as RFC 9110 §10.2.3 defines it, and nothing more:
//!
//! ```text
//! Retry-After   = HTTP-date / delay-seconds
//! delay-seconds = 1*DIGIT
//! ```
//!
//! An HTTP-date is an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) or one of
//! the obsolete forms a recipient must still accept: RFC 850
//! (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
//! A sign, a fraction, an exponent or a unit is not delay-seconds, so `-1`,
//! `1.5`, `1e3` and `5s` are all invalid.
//!
//! One grammar for every reader: the rate-limit checks, the trace family's
//! back-off after 429s and the reference client.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

/// A valid `Retry-After` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// `delay-seconds`: this long after the response was received.
    Delay(Duration),
    /// An HTTP-date: not before this time.
    Date(SystemTime),
}

/// Why a `Retry-After` value is not valid; the display quotes the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryAfterError {
    /// All digits, but more seconds than a `u64` holds.
    OutOfRange(String),
    /// Neither delay-seconds nor an HTTP-date (empty, negative, fractional,
    /// garbage).
    Invalid(String),
}

impl fmt::Display for RetryAfterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryAfterError::OutOfRange(v) => write!(f, "Retry-After `{v}` is out of range"),
            RetryAfterError::Invalid(v) => write!(
                f,
                "Retry-After `{v}` is neither delay-seconds nor an HTTP-date"
            ),
        }
    }
}

impl std::error::Error for RetryAfterError {}

impl RetryAfter {
    /// Parses a field value (surrounding whitespace is not part of it).
    pub fn parse(value: &str) -> Result<RetryAfter, RetryAfterError> {
        let v = value.trim();
        if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            return v
                .parse::<u64>()
                .map(|s| RetryAfter::Delay(Duration::from_secs(s)))
                .map_err(|_| RetryAfterError::OutOfRange(v.to_owned()));
        }
        httpdate::parse_http_date(v)
            .map(RetryAfter::Date)
            .map_err(|_| RetryAfterError::Invalid(v.to_owned()))
    }

    /// How long to wait. A delay is taken as given; a date is read against
    /// the response's own `Date` when it has one (the target's clock, which
    /// set the date), else against `now`. A date in the past means no wait.
    pub fn resolve(&self, date: Option<SystemTime>, now: SystemTime) -> Duration {
        match self {
            RetryAfter::Delay(d) => *d,
            RetryAfter::Date(at) => at
                .duration_since(date.unwrap_or(now))
                .unwrap_or(Duration::ZERO),
        }
    }
}

impl FromStr for RetryAfter {
    type Err = RetryAfterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RetryAfter::parse(s)
    }
}

/// The wait a `Retry-After` value asks for, read against the local clock;
/// `None` when the value is not valid.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    RetryAfter::parse(value)
        .ok()
        .map(|r| r.resolve(None, SystemTime::now()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    /// 784111777 = Sun, 06 Nov 1994 08:49:37 GMT (the RFC's example).
    fn rfc_example() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(784_111_777)
    }

    #[test]
    fn delay_seconds() {
        assert_eq!(
            RetryAfter::parse("120"),
            Ok(RetryAfter::Delay(Duration::from_secs(120)))
        );
        assert_eq!(
            RetryAfter::parse("0"),
            Ok(RetryAfter::Delay(Duration::ZERO))
        );
        assert_eq!(
            RetryAfter::parse(" 7 "),
            Ok(RetryAfter::Delay(Duration::from_secs(7)))
        );
        assert_eq!(
            RetryAfter::parse("007"),
            Ok(RetryAfter::Delay(Duration::from_secs(7)))
        );
        assert_eq!(
            "18446744073709551615".parse::<RetryAfter>(),
            Ok(RetryAfter::Delay(Duration::from_secs(u64::MAX)))
        );
    }

    #[test]
    fn imf_fixdate() {
        assert_eq!(
            RetryAfter::parse("Sun, 06 Nov 1994 08:49:37 GMT"),
            Ok(RetryAfter::Date(rfc_example()))
        );
    }

    #[test]
    fn obsolete_rfc850_date() {
        assert_eq!(
            RetryAfter::parse("Sunday, 06-Nov-94 08:49:37 GMT"),
            Ok(RetryAfter::Date(rfc_example()))
        );
    }

    #[test]
    fn obsolete_asctime_date() {
        assert_eq!(
            RetryAfter::parse("Sun Nov  6 08:49:37 1994"),
            Ok(RetryAfter::Date(rfc_example()))
        );
    }

    #[test]
    fn invalid_values() {
        for bad in [
            "",
            "   ",
            "-1",
            "+1",
            "1.5",
            "0.5",
            "1e3",
            "5s",
            "soon",
            "1 2",
            "NaN",
            "inf",
            "０",
            "Sun, 06 Nov 1994",
            "Sun, 32 Nov 1994 08:49:37 GMT",
        ] {
            match RetryAfter::parse(bad) {
                Err(e @ RetryAfterError::Invalid(_)) => {
                    assert!(e.to_string().contains("neither delay-seconds"), "{e}")
                }
                other => panic!("`{bad}` gave {other:?}"),
            }
        }
    }

    #[test]
    fn overflow_is_out_of_range() {
        let e = RetryAfter::parse("18446744073709551616").unwrap_err();
        assert_eq!(
            e,
            RetryAfterError::OutOfRange("18446744073709551616".into())
        );
        assert_eq!(
            e.to_string(),
            "Retry-After `18446744073709551616` is out of range"
        );
        assert!(RetryAfter::parse(&"9".repeat(400)).is_err());
    }

    #[test]
    fn errors_quote_the_trimmed_value() {
        assert_eq!(
            RetryAfter::parse(" soon ").unwrap_err().to_string(),
            "Retry-After `soon` is neither delay-seconds nor an HTTP-date"
        );
    }

    #[test]
    fn resolve_reads_a_date_against_the_response_date_then_now() {
        let t0 = rfc_example();
        let at = RetryAfter::Date(t0 + Duration::from_secs(5));
        let far = t0 + Duration::from_secs(1000);
        assert_eq!(at.resolve(Some(t0), far), Duration::from_secs(5));
        assert_eq!(at.resolve(None, t0), Duration::from_secs(5));
        assert_eq!(at.resolve(None, far), Duration::ZERO, "in the past");
        let d = RetryAfter::Delay(Duration::from_secs(3));
        assert_eq!(d.resolve(Some(far), t0), Duration::from_secs(3));
    }

    #[test]
    fn parse_retry_after_is_relative_to_now() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(5));
        let d = parse_retry_after(&later).unwrap();
        assert!(
            d > Duration::from_millis(3500) && d <= Duration::from_secs(5),
            "{d:?}"
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("0.5"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
