//! A strict parser for the subset of RFC 8941 Structured Field Values that the
//! IETF rate-limit headers use: Lists and Dictionaries of Items whose bare
//! items are Integers, Decimals, Strings, Tokens or Booleans, with parameters.
//!
//! Why our own: the checks must FAIL on malformed fields (the IETF draft says
//! clients must ignore them, so a server that sends them is broken), and the
//! failure must quote the field and say where it breaks. A lenient parser
//! would hide exactly the defects the check exists to find. Inner lists and
//! byte sequences are valid SF but never used by these headers; they are
//! rejected with a message saying so rather than half-parsed.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Bare {
    Integer(i64),
    Decimal(f64),
    Str(String),
    Token(String),
    Bool(bool),
}

impl fmt::Display for Bare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bare::Integer(i) => write!(f, "{i}"),
            Bare::Decimal(d) => write!(f, "{d}"),
            Bare::Str(s) => write!(f, "\"{s}\""),
            Bare::Token(t) => f.write_str(t),
            Bare::Bool(b) => f.write_str(if *b { "?1" } else { "?0" }),
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

struct P<'a> {
    s: &'a [u8],
    i: usize,
    field: &'a str,
}

type R<T> = Result<T, SfError>;

impl<'a> P<'a> {
    fn new(field: &'a str) -> Self {
        P {
            s: field.as_bytes(),
            i: 0,
            field,
        }
    }
    fn err<T>(&self, reason: impl Into<String>) -> R<T> {
        Err(SfError {
            field: self.field.to_owned(),
            offset: self.i,
            reason: reason.into(),
        })
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eof(&self) -> bool {
        self.i >= self.s.len()
    }
    fn skip_sp(&mut self) {
        while self.peek() == Some(b' ') {
            self.i += 1;
        }
    }
    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ') | Some(b'\t')) {
            self.i += 1;
        }
    }

    /// After a member: end of input, or OWS "," OWS and another member.
    fn member_sep(&mut self) -> R<bool> {
        self.skip_ows();
        if self.eof() {
            return Ok(false);
        }
        if self.peek() != Some(b',') {
            return self.err("expected `,` between members");
        }
        self.i += 1;
        self.skip_ows();
        if self.eof() {
            return self.err("trailing comma");
        }
        Ok(true)
    }

    fn item(&mut self) -> R<Item> {
        if self.peek() == Some(b'(') {
            return self.err("inner lists are not used by this field");
        }
        let value = self.bare()?;
        let params = self.params()?;
        Ok(Item { value, params })
    }

    fn params(&mut self) -> R<Vec<(String, Bare)>> {
        let mut out: Vec<(String, Bare)> = Vec::new();
        while self.peek() == Some(b';') {
            self.i += 1;
            self.skip_sp();
            let key = self.key()?;
            let value = if self.peek() == Some(b'=') {
                self.i += 1;
                self.bare()?
            } else {
                Bare::Bool(true)
            };
            // RFC 8941 §4.2.3.2: a repeated key overwrites the earlier value.
            if let Some(slot) = out.iter_mut().find(|(k, _)| *k == key) {
                slot.1 = value;
            } else {
                out.push((key, value));
            }
        }
        Ok(out)
    }

    fn key(&mut self) -> R<String> {
        match self.peek() {
            Some(c) if c.is_ascii_lowercase() || c == b'*' => {}
            _ => return self.err("expected a key (lowercase letter or `*`)"),
        }
        let start = self.i;
        while let Some(c) = self.peek() {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-.*".contains(&c) {
                self.i += 1;
            } else {
                break;
            }
        }
        Ok(self.field[start..self.i].to_owned())
    }

    fn bare(&mut self) -> R<Bare> {
        match self.peek() {
            Some(b'-') | Some(b'0'..=b'9') => self.number(),
            Some(b'"') => self.string(),
            Some(b'?') => {
                self.i += 1;
                match self.peek() {
                    Some(b'1') => {
                        self.i += 1;
                        Ok(Bare::Bool(true))
                    }
                    Some(b'0') => {
                        self.i += 1;
                        Ok(Bare::Bool(false))
                    }
                    _ => self.err("expected `?0` or `?1`"),
                }
            }
            Some(b':') => self.err("byte sequences are not used by this field"),
            Some(c) if c.is_ascii_alphabetic() || c == b'*' => self.token(),
            None => self.err("unexpected end of field, expected a value"),
            Some(c) => self.err(format!("unexpected `{}`, expected a value", c as char)),
        }
    }

    fn number(&mut self) -> R<Bare> {
        let start = self.i;
        let neg = self.peek() == Some(b'-');
        if neg {
            self.i += 1;
        }
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return self.err("expected a digit");
        }
        let mut int_digits = 0;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
            int_digits += 1;
        }
        if self.peek() == Some(b'.') {
            if int_digits > 12 {
                return self.err("decimal has more than 12 integer digits");
            }
            self.i += 1;
            let mut frac = 0;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
                frac += 1;
            }
            if frac == 0 {
                return self.err("decimal ends with `.`");
            }
            if frac > 3 {
                return self.err("decimal has more than 3 fraction digits");
            }
            let text = &self.field[start..self.i];
            return match text.parse::<f64>() {
                Ok(d) => Ok(Bare::Decimal(d)),
                Err(_) => self.err("invalid decimal"),
            };
        }
        if int_digits > 15 {
            return self.err("integer has more than 15 digits");
        }
        match self.field[start..self.i].parse::<i64>() {
            Ok(n) => Ok(Bare::Integer(n)),
            Err(_) => self.err("invalid integer"),
        }
    }

    fn string(&mut self) -> R<Bare> {
        self.i += 1; // opening quote
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return self.err("unterminated string"),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(Bare::Str(out));
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some(c @ (b'"' | b'\\')) => {
                            out.push(c as char);
                            self.i += 1;
                        }
                        _ => return self.err("only `\\\"` and `\\\\` may be escaped"),
                    }
                }
                Some(c) if (0x20..0x7f).contains(&c) => {
                    out.push(c as char);
                    self.i += 1;
                }
                Some(_) => return self.err("strings may only hold printable ASCII"),
            }
        }
    }

    fn token(&mut self) -> R<Bare> {
        let start = self.i;
        self.i += 1;
        while let Some(c) = self.peek() {
            // tchar / ":" / "/" (RFC 8941 §3.3.4)
            if c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~:/".contains(&c) {
                self.i += 1;
            } else {
                break;
            }
        }
        Ok(Bare::Token(self.field[start..self.i].to_owned()))
    }
}

/// Parses an SF List (RFC 8941 §4.2.1). An empty field is an empty list.
pub fn parse_list(field: &str) -> Result<Vec<Item>, SfError> {
    let mut p = P::new(field);
    p.skip_sp();
    let mut out = Vec::new();
    if p.eof() {
        return Ok(out);
    }
    loop {
        out.push(p.item()?);
        if !p.member_sep()? {
            break;
        }
    }
    Ok(out)
}

/// Parses an SF Dictionary (RFC 8941 §4.2.2): `key=item` members, a bare key
/// meaning `?1`. A repeated key keeps the last value, as the RFC says.
pub fn parse_dictionary(field: &str) -> Result<Vec<(String, Item)>, SfError> {
    let mut p = P::new(field);
    p.skip_sp();
    let mut out: Vec<(String, Item)> = Vec::new();
    if p.eof() {
        return Ok(out);
    }
    loop {
        let key = p.key()?;
        let item = if p.peek() == Some(b'=') {
            p.i += 1;
            p.item()?
        } else {
            Item {
                value: Bare::Bool(true),
                params: p.params()?,
            }
        };
        if let Some(slot) = out.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = item;
        } else {
            out.push((key, item));
        }
        if !p.member_sep()? {
            break;
        }
    }
    Ok(out)
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
        assert!(l.reason.contains("byte sequences"), "{l}");
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
            (r#""default";r=#1"#, "unexpected `#`"),
            (r#""default";r="#, "end of field"),
            (r#""default" r=1"#, "expected `,`"),
            (r#""default";r=1,"#, "trailing comma"),
            (r#""default";R=1"#, "expected a key"),
            (r#""unterminated;r=1"#, "unterminated string"),
            (r#""a";r=1.2345"#, "more than 3 fraction"),
            (r#""a";r=1."#, "ends with `.`"),
            (r#""a";r=1234567890123456"#, "more than 15 digits"),
            (r#""a";r=-"#, "expected a digit"),
            (r#"("a" "b");r=1"#, "inner lists"),
            (r#""a";r=?2"#, "`?0` or `?1`"),
            ("limit=100, remaining=50", "expected `,`"),
            (",a", "unexpected `,`"),
            ("\"é\"", "printable ASCII"),
        ];
        for (field, why) in cases {
            let e = parse_list(field).expect_err(field);
            let msg = e.to_string();
            assert!(msg.contains(field), "field not quoted in {msg}");
            assert!(msg.contains(why), "{field}: expected `{why}` in {msg}");
        }
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
