//! A small lexer for arithmetic expressions.

use std::fmt;
use std::iter::Peekable;
use std::str::Chars;

/// A token of the expression language.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Number(f64),
    Ident(String),
    Op(char),
    LParen,
    RParen,
}

/// Errors the lexer reports, with the byte offset.
#[derive(Debug)]
pub struct LexError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for LexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.offset, self.message)
    }
}

/// Splits an input string into tokens.
pub struct Lexer<'a> {
    chars: Peekable<Chars<'a>>,
    offset: usize,
}

impl<'a> Lexer<'a> {
    /// Creates a lexer over `input`.
    pub fn new(input: &'a str) -> Self {
        Lexer { chars: input.chars().peekable(), offset: 0 }
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        self.offset += c.len_utf8();
        Some(c)
    }

    /// Reads a number starting with `first`.
    fn number(&mut self, first: char) -> Result<Token, LexError> {
        let start = self.offset - 1;
        let mut s = String::from(first);
        while let Some(&c) = self.chars.peek() {
            if c.is_ascii_digit() || c == '.' {
                s.push(c);
                self.bump();
            } else {
                break;
            }
        }
        s.parse().map(Token::Number).map_err(|_| LexError {
            offset: start,
            message: format!("bad number {s:?}"),
        })
    }

    /// Returns all tokens, or the first error.
    pub fn tokens(mut self) -> Result<Vec<Token>, LexError> {
        let mut out = Vec::new();
        while let Some(c) = self.bump() {
            match c {
                ' ' | '\t' | '\n' => {}
                '0'..='9' => out.push(self.number(c)?),
                '+' | '-' | '*' | '/' => out.push(Token::Op(c)),
                '(' => out.push(Token::LParen),
                ')' => out.push(Token::RParen),
                c if c.is_alphabetic() => {
                    let mut id = String::from(c);
                    while let Some(&n) = self.chars.peek() {
                        if !n.is_alphanumeric() {
                            break;
                        }
                        id.push(n);
                        self.bump();
                    }
                    out.push(Token::Ident(id));
                }
                _ => {
                    return Err(LexError { offset: self.offset - 1, message: format!("unexpected {c:?}") })
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_sum() {
        let t = Lexer::new("1 + x").tokens().unwrap();
        assert_eq!(t, vec![Token::Number(1.0), Token::Op('+'), Token::Ident("x".into())]);
    }
}
