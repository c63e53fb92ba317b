//! Wall-clock helpers shared by the reference, the CLI and the families.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> i64 {
    unix_secs(SystemTime::now())
}

/// Whole seconds from the Unix epoch to `t` (0 before the epoch).
pub fn unix_secs(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn seconds_since_the_epoch() {
        assert_eq!(unix_secs(UNIX_EPOCH), 0);
        assert_eq!(
            unix_secs(UNIX_EPOCH + Duration::from_millis(1_700_000_000_900)),
            1_700_000_000
        );
        assert_eq!(unix_secs(UNIX_EPOCH - Duration::from_secs(5)), 0);
        let now = unix_now();
        assert!(now > 1_700_000_000, "{now}");
    }
}
