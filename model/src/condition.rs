//! The condition language of exclusive gateways' sequence flows.
//!
//! Small on purpose: a condition compares process variables with literals.
//!
//! ```text
//! expr    := or
//! or      := and ( "||" and )*
//! and     := unary ( "&&" unary )*
//! unary   := "!" unary | compare
//! compare := operand ( ("==" | "!=" | "<" | "<=" | ">" | ">=") operand )?
//! operand := "(" expr ")" | number | string | true | false | null | path
//! path    := name ( "." name )*        name: [A-Za-z_][A-Za-z0-9_]*
//! string  := "…" or '…' (backslash escapes the next character)
//! ```
//!
//! A whole condition may be wrapped as `${…}` (the form Camunda modellers write).
//!
//! Evaluation: a path reads a variable (and fields of an object variable); a
//! missing variable is `null`. `==`/`!=` compare JSON values (numbers by value).
//! `<`, `<=`, `>`, `>=` compare two numbers or two strings; any other pair is
//! false. A bare operand is true only if it is the boolean `true`.

use std::collections::BTreeMap;

use serde_json::Value;

/// Where and why a condition does not parse (QF042 at load time).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at byte {offset})")]
pub struct ParseError {
    /// Byte offset into the condition text as written.
    pub offset: usize,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Value),
    Path(Vec<String>),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Op(&'static str),
    LParen,
    RParen,
    Dot,
}

/// Parse a condition's text.
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    let (body, base) = unwrap_el(text);
    let toks = lex(body, base)?;
    let mut p = Parser {
        toks,
        pos: 0,
        end: base + body.len(),
    };
    if p.toks.is_empty() {
        return Err(ParseError {
            offset: base,
            message: "empty condition".into(),
        });
    }
    let e = p.or()?;
    if let Some((_, off)) = p.toks.get(p.pos) {
        return Err(ParseError {
            offset: *off,
            message: "unexpected text after the condition".into(),
        });
    }
    Ok(e)
}

/// Strip `${ … }`, returning the inner text and its offset.
fn unwrap_el(text: &str) -> (&str, usize) {
    let lead = text.len() - text.trim_start().len();
    let t = text.trim();
    if let Some(inner) = t.strip_prefix("${").and_then(|s| s.strip_suffix('}')) {
        (inner, lead + 2)
    } else {
        (text, 0)
    }
}

fn lex(s: &str, base: usize) -> Result<Vec<(Tok, usize)>, ParseError> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let off = base + i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let two = s.get(i..i + 2).unwrap_or("");
        let op2 = ["&&", "||", "==", "!=", "<=", ">="]
            .into_iter()
            .find(|o| *o == two);
        if let Some(op) = op2 {
            out.push((Tok::Op(op), off));
            i += 2;
            continue;
        }
        match c {
            b'(' => out.push((Tok::LParen, off)),
            b')' => out.push((Tok::RParen, off)),
            b'.' if !b.get(i + 1).is_some_and(u8::is_ascii_digit) => out.push((Tok::Dot, off)),
            b'!' => out.push((Tok::Op("!"), off)),
            b'<' => out.push((Tok::Op("<"), off)),
            b'>' => out.push((Tok::Op(">"), off)),
            b'=' => {
                return Err(ParseError {
                    offset: off,
                    message: "`=` is not an operator: compare with `==`".into(),
                })
            }
            b'&' | b'|' => {
                return Err(ParseError {
                    offset: off,
                    message: format!("write `{0}{0}`", c as char),
                })
            }
            b'"' | b'\'' => {
                let mut j = i + 1;
                let mut text = String::new();
                loop {
                    match s[j..].chars().next() {
                        None => {
                            return Err(ParseError {
                                offset: off,
                                message: "string literal is not closed".into(),
                            })
                        }
                        Some(ch) if ch as u32 == c as u32 => break,
                        Some('\\') => {
                            j += 1;
                            if let Some(ch) = s[j..].chars().next() {
                                text.push(ch);
                                j += ch.len_utf8();
                            }
                        }
                        Some(ch) => {
                            text.push(ch);
                            j += ch.len_utf8();
                        }
                    }
                }
                out.push((Tok::Str(text), off));
                i = j + 1;
                continue;
            }
            b'0'..=b'9' | b'-' | b'.' => {
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.' || b[j] == b'e') {
                    j += 1;
                }
                match s[i..j].parse::<f64>() {
                    Ok(n) if n.is_finite() => out.push((Tok::Num(n), off)),
                    _ => {
                        return Err(ParseError {
                            offset: off,
                            message: format!("`{}` is not a number", &s[i..j]),
                        })
                    }
                }
                i = j;
                continue;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                out.push((Tok::Ident(s[i..j].to_string()), off));
                i = j;
                continue;
            }
            _ => {
                let ch = s[i..].chars().next().unwrap_or('?');
                return Err(ParseError {
                    offset: off,
                    message: format!("unexpected character `{ch}`"),
                });
            }
        }
        i += 1;
    }
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn offset(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |(_, o)| *o)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.and()?;
        while self.eat_op("||") {
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.unary()?;
        while self.eat_op("&&") {
            e = Expr::And(Box::new(e), Box::new(self.unary()?));
        }
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        if self.eat_op("!") {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        let left = self.operand()?;
        let op = match self.peek() {
            Some(Tok::Op("==")) => CmpOp::Eq,
            Some(Tok::Op("!=")) => CmpOp::Ne,
            Some(Tok::Op("<")) => CmpOp::Lt,
            Some(Tok::Op("<=")) => CmpOp::Le,
            Some(Tok::Op(">")) => CmpOp::Gt,
            Some(Tok::Op(">=")) => CmpOp::Ge,
            _ => return Ok(left),
        };
        self.pos += 1;
        let right = self.operand()?;
        Ok(Expr::Cmp(op, Box::new(left), Box::new(right)))
    }

    fn operand(&mut self) -> Result<Expr, ParseError> {
        let off = self.offset();
        let Some((tok, _)) = self.toks.get(self.pos).cloned() else {
            return Err(ParseError {
                offset: off,
                message: "expected a variable, a literal or `(`".into(),
            });
        };
        self.pos += 1;
        match tok {
            Tok::LParen => {
                let e = self.or()?;
                if self.peek() != Some(&Tok::RParen) {
                    return Err(ParseError {
                        offset: self.offset(),
                        message: "expected `)`".into(),
                    });
                }
                self.pos += 1;
                Ok(e)
            }
            Tok::Num(n) => Ok(Expr::Literal(number(n))),
            Tok::Str(s) => Ok(Expr::Literal(Value::String(s))),
            Tok::Ident(id) => match id.as_str() {
                "true" => Ok(Expr::Literal(Value::Bool(true))),
                "false" => Ok(Expr::Literal(Value::Bool(false))),
                "null" => Ok(Expr::Literal(Value::Null)),
                _ => {
                    let mut path = vec![id];
                    while self.peek() == Some(&Tok::Dot) {
                        self.pos += 1;
                        match self.toks.get(self.pos).cloned() {
                            Some((Tok::Ident(n), _)) => {
                                path.push(n);
                                self.pos += 1;
                            }
                            _ => {
                                return Err(ParseError {
                                    offset: self.offset(),
                                    message: "expected a field name after `.`".into(),
                                })
                            }
                        }
                    }
                    Ok(Expr::Path(path))
                }
            },
            _ => Err(ParseError {
                offset: off,
                message: "expected a variable, a literal or `(`".into(),
            }),
        }
    }
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

impl Expr {
    /// Evaluate against the process variables.
    pub fn eval(&self, vars: &BTreeMap<String, Value>) -> bool {
        self.value(vars) == Value::Bool(true)
    }

    fn value(&self, vars: &BTreeMap<String, Value>) -> Value {
        match self {
            Expr::Literal(v) => v.clone(),
            Expr::Path(p) => {
                let mut cur = vars.get(&p[0]).cloned().unwrap_or(Value::Null);
                for f in &p[1..] {
                    cur = cur.get(f).cloned().unwrap_or(Value::Null);
                }
                cur
            }
            Expr::Not(e) => Value::Bool(!e.eval(vars)),
            Expr::And(a, b) => Value::Bool(a.eval(vars) && b.eval(vars)),
            Expr::Or(a, b) => Value::Bool(a.eval(vars) || b.eval(vars)),
            Expr::Cmp(op, a, b) => Value::Bool(compare(*op, &a.value(vars), &b.value(vars))),
        }
    }
}

fn compare(op: CmpOp, a: &Value, b: &Value) -> bool {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (a, b) {
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .zip(y.as_f64())
            .and_then(|(x, y)| x.partial_cmp(&y)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    };
    match op {
        CmpOp::Eq => ord.map_or(a == b, |o| o == Ordering::Equal),
        CmpOp::Ne => ord.map_or(a != b, |o| o != Ordering::Equal),
        CmpOp::Lt => ord == Some(Ordering::Less),
        CmpOp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => ord == Some(Ordering::Greater),
        CmpOp::Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars() -> BTreeMap<String, Value> {
        let mut m = BTreeMap::new();
        m.insert("amount".into(), json!(42));
        m.insert("approved".into(), json!(true));
        m.insert("country".into(), json!("NL"));
        m.insert("card".into(), json!({"kind": "debit"}));
        m
    }

    fn t(s: &str) -> bool {
        parse(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .eval(&vars())
    }

    #[test]
    fn comparisons_logic_and_paths() {
        assert!(t("amount > 10"));
        assert!(t("amount == 42.0"));
        assert!(!t("amount < 10"));
        assert!(t("approved"));
        assert!(t("approved == true && country == 'NL'"));
        assert!(t("!(amount >= 100) || missing == 1"));
        assert!(t("card.kind == \"debit\""));
        assert!(t("missing == null"));
        assert!(!t("missing > 1"));
        assert!(!t("country"));
        assert!(t("${amount <= 42}"));
        assert!(t("amount > -1.5"));
    }

    #[test]
    fn parse_errors_carry_the_byte_offset() {
        let e = parse("amount = 1").unwrap_err();
        assert_eq!(e.offset, 7);
        let e = parse("(amount > 1").unwrap_err();
        assert_eq!((e.offset, e.message.as_str()), (11, "expected `)`"));
        let e = parse("amount > 'x").unwrap_err();
        assert_eq!(e.offset, 9);
        let e = parse("  ${amount >}").unwrap_err();
        assert_eq!(e.offset, 12);
        assert_eq!(parse("a b").unwrap_err().offset, 2);
        assert_eq!(parse("").unwrap_err().message, "empty condition");
        assert_eq!(parse("a & b").unwrap_err().offset, 2);
    }
}
