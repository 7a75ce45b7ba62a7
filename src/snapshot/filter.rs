//! Ad-hoc snapshot filters: the `where` of a snapshot request, parsed and accepted only as one
//! boolean expression over the table's own columns, and rendered back from the parsed tree with
//! every literal bound as a statement parameter.
//!
//! Invariant: the SQL a filter adds to a chunk query is written here, from a tree of the parts
//! listed below, never from the request's text: column names are backquoted, operators and
//! function names come from this file's own lists, and literals are `?` parameters. So a filter
//! cannot read another table (no subquery, `UNION`, qualified name or table function), cannot
//! stall the snapshot's transaction (no `SLEEP`, `BENCHMARK` or other function outside
//! [`FUNCTIONS`]), and cannot reach server state (no variables, comments or `;`).
//!
//! Accepted: columns; number, string, `TRUE`/`FALSE` and `NULL` literals; `+ - * / % DIV MOD`;
//! `= <> != < <= > >= <=>`; `AND OR NOT` (not `XOR`: the parser binds it tighter than MySQL does); `IS [NOT] NULL|TRUE|FALSE`;
//! `[NOT] IN (literal, ...)`; `[NOT] BETWEEN`; `[NOT] LIKE [ESCAPE]`; the functions in
//! [`FUNCTIONS`] (`DATE_ADD`/`DATE_SUB` with an `INTERVAL <literal> <unit>`).

use std::fmt;

use sqlparser::ast::{
    BinaryOperator, DateTimeField, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments,
    InTarget, ObjectNamePart, UnaryOperator, Value as SqlValue,
};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use super::values::quote_ident as quote;

/// The longest filter accepted, in bytes.
pub const MAX_FILTER_LEN: usize = 4096;

/// How deep a parsed filter may nest (operators and calls; a chain of `AND`s is as deep as it
/// is long). The parser itself stops at [`MAX_PARENS`] nested parentheses.
const MAX_DEPTH: usize = 256;

/// How deep parentheses and calls may nest in the text.
const MAX_PARENS: usize = 64;

/// The functions a filter may call: name, least and most arguments. All are pure (or read only
/// the clock) and cheap.
pub const FUNCTIONS: &[(&str, usize, usize)] = &[
    ("ABS", 1, 1),
    ("CHAR_LENGTH", 1, 1),
    ("COALESCE", 1, 16),
    ("CURDATE", 0, 0),
    ("DATE", 1, 1),
    ("DATE_ADD", 2, 2),
    ("DATE_SUB", 2, 2),
    ("DAY", 1, 1),
    ("HOUR", 1, 1),
    ("IFNULL", 2, 2),
    ("LENGTH", 1, 1),
    ("LOWER", 1, 1),
    ("MONTH", 1, 1),
    ("NOW", 0, 1),
    ("ROUND", 1, 2),
    ("UPPER", 1, 1),
    ("UTC_TIMESTAMP", 0, 1),
    ("YEAR", 1, 1),
];

/// The names of [`FUNCTIONS`], comma-separated.
pub fn filter_functions() -> String {
    FUNCTIONS
        .iter()
        .map(|(n, _, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a filter is refused: the part of it at fault and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    /// The refused part, as written (shortened when long).
    pub part: String,
    /// What is wrong with it.
    pub reason: String,
}

impl FilterError {
    fn new(part: impl fmt::Display, reason: impl Into<String>) -> FilterError {
        let mut part = part.to_string();
        if part.len() > 80 {
            let mut cut = 77;
            while !part.is_char_boundary(cut) {
                cut -= 1;
            }
            part.truncate(cut);
            part.push_str("...");
        }
        FilterError {
            part,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at `{}`)", self.reason, self.part)
    }
}

impl std::error::Error for FilterError {}

/// A literal of a filter, bound as a statement parameter.
#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Int(i64),
    UInt(u64),
    /// A decimal number as written, with its precision and scale (compared exactly, as
    /// `CAST(? AS DECIMAL(p,s))`, not as a double).
    Decimal {
        text: String,
        precision: u32,
        scale: u32,
    },
    Double(f64),
    Text(String),
    Bool(bool),
}

/// One node of an accepted filter.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Column(String),
    Literal(Literal),
    Null,
    Unary(&'static str, Box<Node>),
    Binary(Box<Node>, &'static str, Box<Node>),
    /// `expr IS [NOT] NULL|TRUE|FALSE`.
    Test(Box<Node>, &'static str),
    In {
        expr: Box<Node>,
        list: Vec<Node>,
        negated: bool,
    },
    Between {
        expr: Box<Node>,
        low: Box<Node>,
        high: Box<Node>,
        negated: bool,
    },
    Like {
        expr: Box<Node>,
        pattern: Box<Node>,
        escape: Option<Box<Node>>,
        negated: bool,
    },
    Call(&'static str, Vec<Node>),
    Interval(Box<Node>, &'static str),
}

/// An accepted filter.
#[derive(Debug, Clone, PartialEq)]
pub struct RowFilter {
    root: Node,
}

impl RowFilter {
    /// Parses and checks `text`; the error names the refused part.
    pub fn parse(text: &str) -> Result<RowFilter, FilterError> {
        if text.len() > MAX_FILTER_LEN {
            return Err(FilterError::new(
                text,
                format!(
                    "the filter is {} bytes long, more than {MAX_FILTER_LEN}",
                    text.len()
                ),
            ));
        }
        if text.trim().is_empty() {
            return Err(FilterError::new("", "the filter is empty"));
        }
        if let Some(at) = comment_at(text) {
            return Err(FilterError::new(
                &text[at..],
                "comments are not allowed (`--`, `#`, `/* */` and `/*! */`)",
            ));
        }
        let dialect = MySqlDialect {};
        let tokens = Tokenizer::new(&dialect, text)
            .tokenize()
            .map_err(|e| FilterError::new(text, format!("not SQL: {e}")))?;
        for token in &tokens {
            match token {
                Token::Whitespace(
                    Whitespace::SingleLineComment { .. } | Whitespace::MultiLineComment(_),
                ) => return Err(FilterError::new(token, "comments are not allowed")),
                Token::SemiColon => {
                    return Err(FilterError::new(token, "a filter is one condition, no `;`"))
                }
                Token::Placeholder(_) => {
                    return Err(FilterError::new(token, "placeholders are not allowed"))
                }
                _ => {}
            }
        }
        let mut parser = Parser::new(&dialect)
            .with_recursion_limit(MAX_PARENS)
            .with_tokens(tokens);
        let expr = parser
            .parse_expr()
            .map_err(|e| FilterError::new(text, format!("not one SQL condition: {e}")))?;
        let next = parser.peek_token();
        if next.token != Token::EOF {
            return Err(FilterError::new(
                &next.token,
                "the filter goes on after one condition (a filter is a single condition)",
            ));
        }
        Ok(RowFilter {
            root: node(&expr, 0)?,
        })
    }

    /// The condition as SQL, with a `?` for each literal pushed to `params` in order.
    pub fn render(&self, params: &mut Vec<mysql_async::Value>) -> String {
        let mut sql = String::new();
        render(&self.root, &mut sql, params);
        sql
    }

    /// The columns the filter reads, in order of first use.
    pub fn columns(&self) -> Vec<&str> {
        let mut out = Vec::new();
        columns(&self.root, &mut out);
        out
    }
}

fn columns<'a>(n: &'a Node, out: &mut Vec<&'a str>) {
    match n {
        Node::Column(c) => {
            if !out.contains(&c.as_str()) {
                out.push(c);
            }
        }
        Node::Literal(_) | Node::Null => {}
        Node::Unary(_, e) | Node::Test(e, _) | Node::Interval(e, _) => columns(e, out),
        Node::Binary(l, _, r) => {
            columns(l, out);
            columns(r, out);
        }
        Node::In { expr, list, .. } => {
            columns(expr, out);
            list.iter().for_each(|e| columns(e, out));
        }
        Node::Between {
            expr, low, high, ..
        } => {
            for e in [expr, low, high] {
                columns(e, out);
            }
        }
        Node::Like {
            expr,
            pattern,
            escape,
            ..
        } => {
            columns(expr, out);
            columns(pattern, out);
            if let Some(e) = escape {
                columns(e, out);
            }
        }
        Node::Call(_, args) => args.iter().for_each(|e| columns(e, out)),
    }
}

fn boxed(e: &Expr, depth: usize) -> Result<Box<Node>, FilterError> {
    node(e, depth + 1).map(Box::new)
}

/// The accepted node of `e`, or why it is refused.
fn node(e: &Expr, depth: usize) -> Result<Node, FilterError> {
    if depth > MAX_DEPTH {
        return Err(FilterError::new(
            e,
            format!("the filter nests deeper than {MAX_DEPTH} levels"),
        ));
    }
    Ok(match e {
        Expr::Identifier(ident) => {
            if ident.quote_style.is_none() && ident.value.starts_with('@') {
                return Err(FilterError::new(e, "variables are not allowed"));
            }
            Node::Column(ident.value.clone())
        }
        Expr::CompoundIdentifier(_) => {
            return Err(FilterError::new(
                e,
                "a qualified name is not allowed: name the table's own columns only",
            ))
        }
        Expr::Value(v) => literal(&v.value, e)?,
        Expr::Nested(inner) => node(inner, depth + 1)?,
        Expr::UnaryOp { op, expr } => {
            let op = match op {
                UnaryOperator::Not => "NOT ",
                UnaryOperator::Minus => "-",
                UnaryOperator::Plus => "+",
                _ => {
                    return Err(FilterError::new(
                        e,
                        format!("the operator {op} is not allowed"),
                    ))
                }
            };
            Node::Unary(op, boxed(expr, depth)?)
        }
        Expr::BinaryOp { left, op, right } => {
            let op = binary_operator(op)
                .ok_or_else(|| FilterError::new(e, format!("the operator {op} is not allowed")))?;
            Node::Binary(boxed(left, depth)?, op, boxed(right, depth)?)
        }
        Expr::IsNull(x) => Node::Test(boxed(x, depth)?, "IS NULL"),
        Expr::IsNotNull(x) => Node::Test(boxed(x, depth)?, "IS NOT NULL"),
        Expr::IsTrue(x) => Node::Test(boxed(x, depth)?, "IS TRUE"),
        Expr::IsNotTrue(x) => Node::Test(boxed(x, depth)?, "IS NOT TRUE"),
        Expr::IsFalse(x) => Node::Test(boxed(x, depth)?, "IS FALSE"),
        Expr::IsNotFalse(x) => Node::Test(boxed(x, depth)?, "IS NOT FALSE"),
        Expr::In {
            expr,
            target,
            negated,
            global: false,
        } => {
            let InTarget::List(items) = target else {
                return Err(FilterError::new(
                    e,
                    "IN takes a list of literals only (no subquery or table)",
                ));
            };
            let mut list = Vec::with_capacity(items.len());
            for item in items {
                match node(item, depth + 1)? {
                    lit @ (Node::Literal(_) | Node::Null) => list.push(lit),
                    _ => return Err(FilterError::new(item, "IN takes a list of literals only")),
                }
            }
            Node::In {
                expr: boxed(expr, depth)?,
                list,
                negated: *negated,
            }
        }
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } => Node::Between {
            expr: boxed(expr, depth)?,
            low: boxed(low, depth)?,
            high: boxed(high, depth)?,
            negated: *negated,
        },
        Expr::Like {
            negated,
            any: false,
            expr,
            pattern,
            escape_char,
        } => Node::Like {
            expr: boxed(expr, depth)?,
            pattern: boxed(pattern, depth)?,
            escape: match escape_char.as_deref() {
                Some(Expr::Value(v)) => Some(Box::new(literal(&v.value, e)?)),
                Some(other) => {
                    return Err(FilterError::new(
                        other,
                        "the ESCAPE character is a string literal",
                    ))
                }
                None => None,
            },
            negated: *negated,
        },
        Expr::Function(f) => call(f, e, depth)?,
        Expr::Subquery(_) | Expr::Exists { .. } => {
            return Err(FilterError::new(e, "subqueries are not allowed"))
        }
        _ => {
            return Err(FilterError::new(
                e,
                "this expression is not allowed in a snapshot filter (allowed: columns, \
                 literals, operators, IN (literals), BETWEEN, IS NULL, LIKE and the functions \
                 of the documentation)",
            ))
        }
    })
}

/// Where a comment starts in `text` outside its quoted strings and names, if anywhere. The
/// tokenizer drops plain comments but reads the inside of MySQL's `/*! ... */` as SQL, so
/// comments are found in the text itself.
fn comment_at(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' && q != b'`' {
                    i += 1;
                } else if b == q {
                    if bytes.get(i + 1) == Some(&q) {
                        i += 1;
                    } else {
                        quote = None;
                    }
                }
            }
            None => match b {
                b'\'' | b'"' | b'`' => quote = Some(b),
                b'#' => return Some(i),
                b'-' | b'/' if bytes.get(i + 1) == Some(if b == b'-' { &b'-' } else { &b'*' }) => {
                    return Some(i)
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

fn binary_operator(op: &BinaryOperator) -> Option<&'static str> {
    Some(match op {
        BinaryOperator::Plus => "+",
        BinaryOperator::Minus => "-",
        BinaryOperator::Multiply => "*",
        BinaryOperator::Divide => "/",
        BinaryOperator::Modulo => "%",
        BinaryOperator::MyIntegerDivide => "DIV",
        BinaryOperator::Gt => ">",
        BinaryOperator::Lt => "<",
        BinaryOperator::GtEq => ">=",
        BinaryOperator::LtEq => "<=",
        BinaryOperator::Spaceship => "<=>",
        BinaryOperator::Eq => "=",
        BinaryOperator::NotEq => "<>",
        BinaryOperator::And => "AND",
        BinaryOperator::Or => "OR",
        _ => return None,
    })
}

/// The literal `v` (part of `e`).
fn literal(v: &SqlValue, e: &impl fmt::Display) -> Result<Node, FilterError> {
    Ok(Node::Literal(match v {
        SqlValue::Number(text, false) => number(text)
            .ok_or_else(|| FilterError::new(e, format!("the number {text} is out of range")))?,
        SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => {
            Literal::Text(s.clone())
        }
        SqlValue::Boolean(b) => Literal::Bool(*b),
        SqlValue::Null => return Ok(Node::Null),
        _ => {
            return Err(FilterError::new(
                e,
                "only number, string, TRUE/FALSE and NULL literals are allowed",
            ))
        }
    }))
}

/// A number literal as written: an integer, an exact decimal or (with an exponent) a double.
fn number(text: &str) -> Option<Literal> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(Literal::Int(i));
    }
    if let Ok(u) = text.parse::<u64>() {
        return Some(Literal::UInt(u));
    }
    if text.contains(['e', 'E']) {
        return text
            .parse::<f64>()
            .ok()
            .filter(|d| d.is_finite())
            .map(Literal::Double);
    }
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if !(int.bytes().all(|b| b.is_ascii_digit()) && frac.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let int = int.trim_start_matches('0');
    let scale = u32::try_from(frac.len()).ok()?;
    let precision = u32::try_from(int.len()).ok()? + scale;
    // MySQL's DECIMAL holds at most 65 digits, 30 of them after the point.
    (scale <= 30 && precision <= 65).then(|| Literal::Decimal {
        text: text.to_string(),
        precision: precision.max(1),
        scale,
    })
}

/// A call of a function of [`FUNCTIONS`].
fn call(f: &Function, e: &Expr, depth: usize) -> Result<Node, FilterError> {
    let [ObjectNamePart::Identifier(ident)] = f.name.0.as_slice() else {
        return Err(FilterError::new(
            e,
            "a qualified function name is not allowed",
        ));
    };
    let upper = ident.value.to_ascii_uppercase();
    // CURRENT_DATE and CURRENT_TIMESTAMP (with or without parentheses) are CURDATE and NOW.
    let wanted = match upper.as_str() {
        "CURRENT_DATE" => "CURDATE",
        "CURRENT_TIMESTAMP" | "LOCALTIMESTAMP" | "LOCALTIME" => "NOW",
        other => other,
    };
    let Some(&(name, least, most)) = FUNCTIONS.iter().find(|(n, _, _)| *n == wanted) else {
        return Err(FilterError::new(
            e,
            format!(
                "the function {} is not allowed (allowed: {})",
                ident.value,
                filter_functions()
            ),
        ));
    };
    if f.over.is_some()
        || f.filter.is_some()
        || f.null_treatment.is_some()
        || !f.within_group.is_empty()
        || !matches!(f.parameters, FunctionArguments::None)
    {
        return Err(FilterError::new(
            e,
            "window, FILTER and WITHIN GROUP clauses are not allowed",
        ));
    }
    let args: &[FunctionArg] = match &f.args {
        FunctionArguments::None => &[],
        FunctionArguments::List(list)
            if list.duplicate_treatment.is_none() && list.clauses.is_empty() =>
        {
            &list.args
        }
        _ => {
            return Err(FilterError::new(
                e,
                "function arguments are expressions only (no subquery, DISTINCT or clauses)",
            ))
        }
    };
    if args.len() < least || args.len() > most {
        return Err(FilterError::new(
            e,
            format!(
                "{name} takes {} arguments, not {}",
                if least == most {
                    least.to_string()
                } else {
                    format!("{least} to {most}")
                },
                args.len()
            ),
        ));
    }
    let mut nodes = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) = arg else {
            return Err(FilterError::new(
                arg,
                "arguments are plain expressions only",
            ));
        };
        let interval_slot = matches!(name, "DATE_ADD" | "DATE_SUB") && i == 1;
        nodes.push(match (x, interval_slot) {
            (Expr::Interval(iv), true) => interval(iv, x, depth)?,
            (_, true) => {
                return Err(FilterError::new(
                    x,
                    format!("the second argument of {name} is an INTERVAL <number> <unit>"),
                ))
            }
            (_, false) => node(x, depth + 1)?,
        });
    }
    Ok(Node::Call(name, nodes))
}

/// `INTERVAL <literal> <unit>` (the second argument of DATE_ADD and DATE_SUB).
fn interval(iv: &sqlparser::ast::Interval, e: &Expr, depth: usize) -> Result<Node, FilterError> {
    let unit = match &iv.leading_field {
        Some(DateTimeField::Microsecond) => "MICROSECOND",
        Some(DateTimeField::Second) => "SECOND",
        Some(DateTimeField::Minute) => "MINUTE",
        Some(DateTimeField::Hour) => "HOUR",
        Some(DateTimeField::Day) => "DAY",
        Some(DateTimeField::Week(None)) => "WEEK",
        Some(DateTimeField::Month) => "MONTH",
        Some(DateTimeField::Quarter) => "QUARTER",
        Some(DateTimeField::Year) => "YEAR",
        _ => {
            return Err(FilterError::new(
                e,
                "the interval's unit is one of MICROSECOND, SECOND, MINUTE, HOUR, DAY, WEEK, \
                 MONTH, QUARTER, YEAR",
            ))
        }
    };
    if iv.last_field.is_some()
        || iv.leading_precision.is_some()
        || iv.fractional_seconds_precision.is_some()
    {
        return Err(FilterError::new(e, "a compound interval is not allowed"));
    }
    match node(&iv.value, depth + 1)? {
        lit @ Node::Literal(_) => Ok(Node::Interval(Box::new(lit), unit)),
        _ => Err(FilterError::new(
            &iv.value,
            "the interval's amount is a literal number",
        )),
    }
}

fn render(n: &Node, sql: &mut String, params: &mut Vec<mysql_async::Value>) {
    match n {
        Node::Column(c) => sql.push_str(&quote(c)),
        Node::Literal(l) => render_literal(l, sql, params),
        Node::Null => sql.push_str("NULL"),
        Node::Unary(op, e) => {
            sql.push('(');
            sql.push_str(op);
            render(e, sql, params);
            sql.push(')');
        }
        Node::Binary(l, op, r) => {
            sql.push('(');
            render(l, sql, params);
            sql.push(' ');
            sql.push_str(op);
            sql.push(' ');
            render(r, sql, params);
            sql.push(')');
        }
        Node::Test(e, test) => {
            sql.push('(');
            render(e, sql, params);
            sql.push(' ');
            sql.push_str(test);
            sql.push(')');
        }
        Node::In {
            expr,
            list,
            negated,
        } => {
            sql.push('(');
            render(expr, sql, params);
            sql.push_str(if *negated { " NOT IN (" } else { " IN (" });
            render_list(list, sql, params);
            sql.push_str("))");
        }
        Node::Between {
            expr,
            low,
            high,
            negated,
        } => {
            sql.push('(');
            render(expr, sql, params);
            sql.push_str(if *negated {
                " NOT BETWEEN "
            } else {
                " BETWEEN "
            });
            render(low, sql, params);
            sql.push_str(" AND ");
            render(high, sql, params);
            sql.push(')');
        }
        Node::Like {
            expr,
            pattern,
            escape,
            negated,
        } => {
            sql.push('(');
            render(expr, sql, params);
            sql.push_str(if *negated { " NOT LIKE " } else { " LIKE " });
            render(pattern, sql, params);
            if let Some(esc) = escape {
                sql.push_str(" ESCAPE ");
                render(esc, sql, params);
            }
            sql.push(')');
        }
        Node::Call(name, args) => {
            sql.push_str(name);
            sql.push('(');
            render_list(args, sql, params);
            sql.push(')');
        }
        Node::Interval(amount, unit) => {
            sql.push_str("INTERVAL ");
            render(amount, sql, params);
            sql.push(' ');
            sql.push_str(unit);
        }
    }
}

/// `a, b, c`.
fn render_list(items: &[Node], sql: &mut String, params: &mut Vec<mysql_async::Value>) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        render(item, sql, params);
    }
}

fn render_literal(l: &Literal, sql: &mut String, params: &mut Vec<mysql_async::Value>) {
    use mysql_async::Value as P;
    match l {
        Literal::Int(i) => {
            sql.push('?');
            params.push(P::Int(*i));
        }
        Literal::UInt(u) => {
            sql.push('?');
            params.push(P::UInt(*u));
        }
        Literal::Decimal {
            text,
            precision,
            scale,
        } => {
            sql.push_str(&format!("CAST(? AS DECIMAL({precision},{scale}))"));
            params.push(P::Bytes(text.clone().into_bytes()));
        }
        Literal::Double(d) => {
            sql.push('?');
            params.push(P::Double(*d));
        }
        Literal::Text(s) => {
            sql.push('?');
            params.push(P::Bytes(s.clone().into_bytes()));
        }
        Literal::Bool(b) => sql.push_str(if *b { "TRUE" } else { "FALSE" }),
    }
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
