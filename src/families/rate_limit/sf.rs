//! Structured Field Values (RFC 9651, which obsoletes RFC 8941) for the IETF
//! rate-limit headers, through the maintained `sfv` crate (tested against the
//! HTTP WG's structured-field test corpus), with tminus's own error text on
//! top: the field quoted, the byte where it breaks, and why.
//!
//! Every valid field parses, whatever bare items it carries (byte sequences
//! such as draft-8's `pk=:…:`, dates, display strings, inner lists); the
//! rate-limit checks then read only the members they know. Malformed fields
//! still fail: the draft tells clients to ignore them, so a server that sends
//! them is broken, and the check must say so.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Bare {
    Integer(i64),
    Decimal(f64),
    Str(String),
    Token(String),
    Bool(bool),
    /// `:base64:` (e.g. draft-8's partition key `pk`).
    Bytes(Vec<u8>),
    /// `@seconds` since the epoch (RFC 9651).
    Date(i64),
    /// `%"…"` (RFC 9651), decoded.
    DisplayString(String),
    /// `(a b c)`: the items of an inner list.
    InnerList(Vec<Item>),
}

impl fmt::Display for Bare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bare::Integer(i) => write!(f, "{i}"),
            Bare::Decimal(d) => write!(f, "{d}"),
            Bare::Str(s) => write!(f, "\"{s}\""),
            Bare::Token(t) => f.write_str(t),
            Bare::Bool(b) => f.write_str(if *b { "?1" } else { "?0" }),
            Bare::Bytes(b) => {
                use base64::Engine;
                write!(
                    f,
                    ":{}:",
                    base64::engine::general_purpose::STANDARD.encode(b)
                )
            }
            Bare::Date(d) => write!(f, "@{d}"),
            Bare::DisplayString(s) => write!(f, "%\"{s}\""),
            Bare::InnerList(items) => {
                f.write_str("(")?;
                for (i, it) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{}", it.value)?;
                }
                f.write_str(")")
            }
        }
    }
}

/// An item: a bare value and its parameters in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub value: Bare,
    pub params: Vec<(String, Bare)>,
}

impl Item {
    pub fn param(&self, key: &str) -> Option<&Bare> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// The name of a rate-limit item: a String or a Token.
    pub fn name(&self) -> Option<&str> {
        match &self.value {
            Bare::Str(s) | Bare::Token(s) => Some(s),
            _ => None,
        }
    }
}

/// Why a field did not parse: the field as received, the byte offset and
/// what was expected there.
#[derive(Debug, Clone, PartialEq)]
pub struct SfError {
    pub field: String,
    pub offset: usize,
    pub reason: String,
}

impl fmt::Display for SfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a valid structured field: {} at byte {}",
            self.field, self.reason, self.offset
        )
    }
}

fn error(field: &str, e: sfv::Error) -> SfError {
    let text = e.to_string();
    // sfv says "… at index N"; the offset is reported apart.
    let reason = match text.split_once(" at index ") {
        Some((r, _)) => r.to_owned(),
        None => text,
    };
    SfError {
        field: field.to_owned(),
        offset: e.index().unwrap_or(0),
        reason,
    }
}

fn bare(b: &sfv::BareItem) -> Bare {
    match b {
        sfv::BareItem::Integer(i) => Bare::Integer(i64::from(*i)),
        sfv::BareItem::Decimal(d) => {
            Bare::Decimal(i64::from(d.as_integer_scaled_1000()) as f64 / 1000.0)
        }
        sfv::BareItem::String(s) => Bare::Str(s.as_str().to_owned()),
        sfv::BareItem::Token(t) => Bare::Token(t.as_str().to_owned()),
        sfv::BareItem::Boolean(b) => Bare::Bool(*b),
        sfv::BareItem::ByteSequence(b) => Bare::Bytes(b.clone()),
        sfv::BareItem::Date(d) => Bare::Date(i64::from(d.unix_seconds())),
        sfv::BareItem::DisplayString(s) => Bare::DisplayString(s.clone()),
    }
}

fn params(p: &sfv::Parameters) -> Vec<(String, Bare)> {
    p.iter()
        .map(|(k, v)| (k.as_str().to_owned(), bare(v)))
        .collect()
}

fn item(i: &sfv::Item) -> Item {
    Item {
        value: bare(&i.bare_item),
        params: params(&i.params),
    }
}

fn entry(e: &sfv::ListEntry) -> Item {
    match e {
        sfv::ListEntry::Item(i) => item(i),
        sfv::ListEntry::InnerList(l) => Item {
            value: Bare::InnerList(l.items.iter().map(item).collect()),
            params: params(&l.params),
        },
    }
}

/// Parses an SF List (RFC 9651 §4.2.1). An empty field is an empty list.
pub fn parse_list(field: &str) -> Result<Vec<Item>, SfError> {
    let list: sfv::List = sfv::Parser::new(field)
        .parse()
        .map_err(|e| error(field, e))?;
    Ok(list.iter().map(entry).collect())
}

/// Parses an SF Dictionary (RFC 9651 §4.2.2): `key=item` members, a bare key
/// meaning `?1`. A repeated key keeps the last value, as the RFC says.
pub fn parse_dictionary(field: &str) -> Result<Vec<(String, Item)>, SfError> {
    let dict: sfv::Dictionary = sfv::Parser::new(field)
        .parse()
        .map_err(|e| error(field, e))?;
    Ok(dict
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), entry(v)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(n: i64) -> Bare {
        Bare::Integer(n)
    }

    #[test]
    fn draft8_ratelimit_fields() {
        let l = parse_list(r#""default";r=50;t=30"#).unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].name(), Some("default"));
        assert_eq!(l[0].param("r"), Some(&int(50)));
        assert_eq!(l[0].param("t"), Some(&int(30)));
        let l = parse_list(r#""burst";q=100;w=1, "daily";q=1000;w=86400"#).unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].name(), Some("daily"));
        assert_eq!(l[1].param("w"), Some(&int(86400)));
    }

    #[test]
    fn tokens_booleans_decimals_and_whitespace() {
        let l = parse_list("  day;q=5;pk=:x , hour ;x").unwrap_err();
        assert!(l.reason.contains("byte sequence"), "{l}");
        let l = parse_list("day;q=5;flag, hour;d=1.5;e=?0").unwrap();
        assert_eq!(l[0].name(), Some("day"));
        assert_eq!(l[0].param("flag"), Some(&Bare::Bool(true)));
        assert_eq!(l[1].param("d"), Some(&Bare::Decimal(1.5)));
        assert_eq!(l[1].param("e"), Some(&Bare::Bool(false)));
        assert_eq!(parse_list("").unwrap(), vec![]);
        assert_eq!(parse_list("a,\tb").unwrap().len(), 2);
    }

    #[test]
    fn repeated_param_keeps_last() {
        let l = parse_list(r#""a";r=1;r=2"#).unwrap();
        assert_eq!(l[0].params, vec![("r".to_owned(), int(2))]);
    }

    #[test]
    fn escapes_in_strings() {
        let l = parse_list(r#""a\"b\\c";r=1"#).unwrap();
        assert_eq!(l[0].name(), Some("a\"b\\c"));
        assert!(parse_list(r#""a\nb""#).is_err());
    }

    #[test]
    fn malformed_inputs_fail_with_the_field_quoted() {
        let cases: &[(&str, &str)] = &[
            (r#""default";r=#1"#, "start of bare item"),
            (r#""default";r="#, "start of bare item"),
            (r#""default" r=1"#, ""),
            (r#""default";r=1,"#, "trailing comma"),
            (r#""default";R=1"#, ""),
            (r#""unterminated;r=1"#, "string"),
            (r#""a";r=1.2345"#, "decimal"),
            (r#""a";r=1."#, "decimal"),
            (r#""a";r=1234567890123456"#, "too many digits"),
            (r#""a";r=-"#, ""),
            (r#""a";r=?2"#, "boolean"),
            ("limit=100, remaining=50", ""),
            (",a", ""),
            ("\"é\"", ""),
        ];
        for (field, why) in cases {
            let e = parse_list(field).expect_err(field);
            let msg = e.to_string();
            assert!(msg.contains(field), "field not quoted in {msg}");
            assert!(msg.contains(why), "{field}: expected `{why}` in {msg}");
            assert!(!e.reason.is_empty(), "{msg}");
        }
    }

    /// RFC 9651 bare items that earlier hand-written parsers rejected: every
    /// valid field must parse (express-rate-limit sends `pk=:…:`).
    #[test]
    fn every_bare_item_type_parses() {
        let l = parse_list(r#""default";q=100;w=60;pk=:MTJjYTE3YjQ5YWYy:"#).unwrap();
        assert_eq!(
            l[0].param("pk"),
            Some(&Bare::Bytes(b"12ca17b49af2".to_vec()))
        );
        assert_eq!(l[0].param("q"), Some(&int(100)));
        let l = parse_list(r#"a;d=@1700000000, b;s=%"f%c3%bc%c3%bc", ("x" y);q=1"#).unwrap();
        assert_eq!(l[0].param("d"), Some(&Bare::Date(1_700_000_000)));
        assert_eq!(l[1].param("s"), Some(&Bare::DisplayString("füü".into())));
        assert_eq!(
            l[2].value,
            Bare::InnerList(vec![
                Item {
                    value: Bare::Str("x".into()),
                    params: vec![]
                },
                Item {
                    value: Bare::Token("y".into()),
                    params: vec![]
                },
            ])
        );
        assert_eq!(l[2].param("q"), Some(&int(1)));
        let l = parse_list("t;a=-1.5;b=*tok/x:y;c=?0").unwrap();
        assert_eq!(l[0].param("a"), Some(&Bare::Decimal(-1.5)));
        assert_eq!(l[0].param("b"), Some(&Bare::Token("*tok/x:y".into())));
        assert_eq!(l[0].param("c"), Some(&Bare::Bool(false)));
    }

    #[test]
    fn dictionaries_for_draft7() {
        let d = parse_dictionary("limit=100, remaining=50, reset=30").unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d[1].0, "remaining");
        assert_eq!(d[1].1.value, int(50));
        let d = parse_dictionary("a, b=2;x").unwrap();
        assert_eq!(d[0].1.value, Bare::Bool(true));
        assert_eq!(d[1].1.param("x"), Some(&Bare::Bool(true)));
        assert!(parse_dictionary("limit=100,").is_err());
        assert!(parse_dictionary("Limit=100").is_err());
        assert!(parse_dictionary("limit=1 0").is_err());
    }
}
