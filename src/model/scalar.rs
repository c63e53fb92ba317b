//! Small value types that accept the spellings people write in YAML and
//! reject the rest at the exact position: scalars as text, durations
//! (`500ms`, `5s`, `2m`, or a bare number of seconds) and status sets
//! (`201`, `[200, 201]`, `2xx`).

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

/// A YAML scalar kept as text: `1`, `true` and `"1"` are all accepted where a
/// value ends up in a header, a query string or a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar(pub String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration written as `250ms`, `1.5s`, `2m`, `1h` or a bare number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationValue(pub Duration);

/// Parses a size in bytes: digits, optionally followed by `B`, `KiB`/`K`/`KB`
/// (1024), `MiB`/`M`/`MB` or `GiB`/`G`/`GB` (powers of 1024: the limits it
/// sets are memory), e.g. `2MiB`, `512k`, `1048576`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 2MiB, 512KiB, 1048576)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "`{text}` is not a size (e.g. 2MiB, 512KiB, 1048576)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{text}` is too large a size"))
}

/// Parses the duration spellings tminus accepts everywhere (CLI included).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration `{text}`: expected a number and a unit (ms, s, m, h), e.g. `500ms` or `5s`"))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1000.0,
        "us" | "µs" => value / 1_000_000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "invalid duration `{text}`: unknown unit `{other}` (use ms, s, m or h)"
            ))
        }
    };
    if !secs.is_finite() || !(0.0..=7.0 * 24.0 * 3600.0).contains(&secs) {
        return Err(format!(
            "invalid duration `{text}`: out of range (0 to 7 days)"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl<'de> Deserialize<'de> for DurationValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Scalar(text) = Scalar::deserialize(d)?;
        parse_duration(&text)
            .map(DurationValue)
            .map_err(de::Error::custom)
    }
}

/// One accepted status or a class of them (`2xx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusPattern {
    Exact(u16),
    Class(u16),
}

impl StatusPattern {
    pub fn matches(&self, status: u16) -> bool {
        match self {
            StatusPattern::Exact(s) => *s == status,
            StatusPattern::Class(c) => status / 100 == *c,
        }
    }
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.len() == 3 && t.ends_with("xx") {
            if let Some(c) = t[..1].parse::<u16>().ok().filter(|c| (1..=5).contains(c)) {
                return Ok(StatusPattern::Class(c));
            }
        }
        match t.parse::<u16>() {
            Ok(s) if (100..=599).contains(&s) => Ok(StatusPattern::Exact(s)),
            _ => Err(format!(
                "invalid status `{text}`: expected a code from 100 to 599 or a class like `2xx`"
            )),
        }
    }
}

impl fmt::Display for StatusPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusPattern::Exact(s) => write!(f, "{s}"),
            StatusPattern::Class(c) => write!(f, "{c}xx"),
        }
    }
}

/// `status: 201`, `status: [200, 201]` or `status: 2xx`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSet(pub Vec<StatusPattern>);

impl StatusSet {
    pub fn single(code: u16) -> Self {
        StatusSet(vec![StatusPattern::Exact(code)])
    }
    pub fn matches(&self, status: u16) -> bool {
        self.0.iter().any(|p| p.matches(status))
    }
}

impl fmt::Display for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|p| p.to_string()).collect();
        if parts.len() == 1 {
            f.write_str(&parts[0])
        } else {
            write!(f, "one of [{}]", parts.join(", "))
        }
    }
}

impl<'de> Deserialize<'de> for StatusSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StatusSet;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a status code, a class like `2xx`, or a list of them")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<StatusSet, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<StatusSet, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StatusSet, E> {
                StatusPattern::parse(v)
                    .map(|p| StatusSet(vec![p]))
                    .map_err(E::custom)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StatusSet, A::Error> {
                let mut out = Vec::new();
                while let Some(Scalar(s)) = seq.next_element::<Scalar>()? {
                    out.push(StatusPattern::parse(&s).map_err(de::Error::custom)?);
                }
                if out.is_empty() {
                    return Err(de::Error::custom("an empty status list accepts nothing"));
                }
                Ok(StatusSet(out))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_parse_in_powers_of_1024() {
        assert_eq!(super::parse_bytes("2MiB"), Ok(2 << 20));
        assert_eq!(super::parse_bytes("512k"), Ok(512 << 10));
        assert_eq!(super::parse_bytes("1048576"), Ok(1 << 20));
        assert_eq!(super::parse_bytes("1 GB"), Ok(1 << 30));
        assert!(super::parse_bytes("2 furlongs").is_err());
        assert!(super::parse_bytes("MiB").is_err());
        assert!(super::parse_bytes("99999999999999GiB").is_err());
    }

    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("5x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn statuses() {
        assert!(StatusPattern::parse("2xx").unwrap().matches(204));
        assert!(!StatusPattern::parse("2xx").unwrap().matches(301));
        assert!(StatusPattern::parse("99").is_err());
        assert!(StatusPattern::parse("6xx").is_err());
    }
}
