//! The plain values of a waiver (`waiver` holds the spec and the rules): a
//! calendar day in UTC, a planned waiver, and what a waiver did in a run,
//! which an `Outcome` carries to every report.

use std::fmt;

use serde::Serialize;

/// A calendar day (UTC); ordered by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    pub year: i32,
    pub month: u8,
    pub day: u8,
}

fn leap(y: i32) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in(y: i32, m: u8) -> u8 {
    match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl Date {
    /// `YYYY-MM-DD`, a real day (no 2027-02-30).
    pub fn parse(s: &str) -> Result<Date, String> {
        let bad = || format!("`{s}` is not a date: write YYYY-MM-DD, e.g. 2027-01-31");
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return Err(bad());
        }
        let num = |r: std::ops::Range<usize>| -> Result<u32, String> {
            let t = &s[r];
            if t.bytes().all(|c| c.is_ascii_digit()) {
                t.parse().map_err(|_| bad())
            } else {
                Err(bad())
            }
        };
        let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (year, month, day) = (y as i32, m as u8, d as u8);
        if !(1..=12).contains(&month) || day == 0 || day > days_in(year, month) {
            return Err(format!("`{s}` is not a day of the calendar"));
        }
        Ok(Date { year, month, day })
    }

    /// The UTC day `days` after 1970-01-01 (Howard Hinnant's civil_from_days).
    pub fn from_unix_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        Date { year, month, day }
    }

    /// Today in UTC, by the system clock.
    pub fn today() -> Date {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Date::from_unix_days(secs.div_euclid(86_400))
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

impl Serialize for Date {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A planned waiver: checked against the kind's properties and the calendar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiver {
    pub property: &'static str,
    pub reason: String,
    pub until: Date,
}

/// What a waiver did to its property in one run (every report lists it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WaiverState {
    /// In force, and the property was broken: reported waived.
    Applied,
    /// In force, but the property held (or could not be judged): not needed.
    Unused,
    /// Past its date: the property failed.
    Expired,
}

impl WaiverNote {
    /// One line for people: `applied until 2027-01-31: reason`.
    pub fn describe(&self) -> String {
        let when = match self.state {
            WaiverState::Applied => format!("waived until {}", self.until),
            WaiverState::Unused => format!("not needed (until {})", self.until),
            WaiverState::Expired => format!("expired on {}", self.until),
        };
        format!("{when}: {}", self.reason)
    }
}

impl WaiverState {
    pub fn as_str(self) -> &'static str {
        match self {
            WaiverState::Applied => "applied",
            WaiverState::Unused => "unused",
            WaiverState::Expired => "expired",
        }
    }
}

/// A waiver as reported with its check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaiverNote {
    pub property: &'static str,
    pub reason: String,
    pub until: Date,
    pub state: WaiverState,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Date {
        Date::parse(s).unwrap()
    }

    #[test]
    fn dates_parse_strictly_and_order_by_time() {
        assert_eq!(d("2027-01-31").to_string(), "2027-01-31");
        assert!(d("2026-12-31") < d("2027-01-01"));
        assert!(d("2027-02-01") > d("2027-01-31"));
        assert_eq!(d("2028-02-29").day, 29);
        for bad in [
            "2027-02-29",
            "2100-02-29",
            "2027-13-01",
            "2027-00-10",
            "2027-1-1",
            "27-01-01",
            "2027/01/01",
            "tomorrow",
            "2027-01-3x",
            "+027-01-01",
        ] {
            assert!(Date::parse(bad).is_err(), "{bad}");
        }
        assert!(Date::parse("2000-02-29").is_ok());
    }

    #[test]
    fn unix_days_are_utc_calendar_days() {
        assert_eq!(Date::from_unix_days(0), d("1970-01-01"));
        assert_eq!(Date::from_unix_days(-1), d("1969-12-31"));
        assert_eq!(Date::from_unix_days(11_016), d("2000-02-29"));
        // 2026-12-02 is day 20,789 since the epoch.
        assert_eq!(Date::from_unix_days(20_789), d("2026-12-02"));
        // Every day of 400 years round-trips through parse and display.
        let mut prev = Date::from_unix_days(-1);
        for n in 0..146_097 {
            let day = Date::from_unix_days(n);
            assert!(day > prev, "{day} after {prev}");
            assert_eq!(Date::parse(&day.to_string()), Ok(day));
            prev = day;
        }
    }
}
