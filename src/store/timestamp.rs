//! ISO-8601 UTC timestamps with milliseconds (`2026-07-03T12:34:56.789Z`),
//! as written to log files and stored in the database.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

/// Formats `t` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds truncated).
///
/// Never fails: a time outside the range the `time` crate represents
/// (before year -9999 or after 9999) is clamped to the Unix epoch.
pub(crate) fn format_utc_millis(t: SystemTime) -> String {
    let mut s = String::with_capacity(24);
    push_utc_millis(&mut s, t);
    s
}

/// `t` as whole milliseconds since the Unix epoch (negative before it):
/// two times with the same value format the same.
pub(crate) fn unix_millis(t: SystemTime) -> i128 {
    // Floored, as the formatted date is (…59.999Z is 1 ns before the epoch).
    unix_nanos(t).div_euclid(1_000_000)
}

fn unix_nanos(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// Appends the [`format_utc_millis`] rendering of `t` to `out`.
pub(crate) fn push_utc_millis(out: &mut String, t: SystemTime) {
    let nanos = unix_nanos(t);
    let dt = OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.millisecond()
    );
}

/// Parses a timestamp written by this store (RFC 3339), or SQLite's own
/// `YYYY-MM-DD HH:MM:SS[.fff]` (read as UTC), so rows written by other tools
/// are readable too. `None` when `s` is neither.
pub(crate) fn parse_utc(s: &str) -> Option<SystemTime> {
    let dt = match OffsetDateTime::parse(s, &Rfc3339) {
        Ok(dt) => dt,
        Err(_) => PrimitiveDateTime::parse(
            s,
            format_description!(
                "[year]-[month]-[day] [hour]:[minute]:[second][optional [.[subsecond]]]"
            ),
        )
        .ok()?
        .assume_utc(),
    };
    let nanos = dt.unix_timestamp_nanos();
    if nanos >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_nanos(u64::try_from(nanos).ok()?))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_nanos(u64::try_from(-nanos).ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_and_parse() {
        let t = UNIX_EPOCH + Duration::from_millis(1_783_082_096_789);
        let s = format_utc_millis(t);
        assert_eq!(s, "2026-07-03T12:34:56.789Z");
        assert_eq!(parse_utc(&s), Some(t));
        // Sub-millisecond precision is truncated, not rounded.
        assert_eq!(
            format_utc_millis(t + Duration::from_micros(999)),
            "2026-07-03T12:34:56.789Z"
        );
        assert_eq!(format_utc_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_utc_millis(UNIX_EPOCH - Duration::from_millis(1)),
            "1969-12-31T23:59:59.999Z"
        );
        assert_eq!(
            parse_utc("2026-07-03 12:34:56"),
            Some(UNIX_EPOCH + Duration::from_secs(1_783_082_096))
        );
        assert_eq!(parse_utc("yesterday"), None);
    }

    #[test]
    fn equal_millis_format_equal() {
        let base = UNIX_EPOCH + Duration::from_millis(1_783_082_096_789);
        let times = [
            base,
            base + Duration::from_micros(999),
            base + Duration::from_millis(1),
            UNIX_EPOCH,
            UNIX_EPOCH - Duration::from_nanos(1),
            UNIX_EPOCH - Duration::from_millis(1),
            UNIX_EPOCH - Duration::from_micros(1001),
        ];
        for a in times {
            for b in times {
                assert_eq!(
                    unix_millis(a) == unix_millis(b),
                    format_utc_millis(a) == format_utc_millis(b),
                    "{a:?} {b:?}"
                );
            }
        }
        assert_eq!(unix_millis(UNIX_EPOCH - Duration::from_nanos(1)), -1);
    }

    #[test]
    fn absurd_times_do_not_panic() {
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 4);
        assert_eq!(format_utc_millis(far), "1970-01-01T00:00:00.000Z");
    }
}
