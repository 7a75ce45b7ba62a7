use super::*;
use mysql_async::Value as P;

fn rendered(text: &str) -> (String, Vec<P>) {
    let f = RowFilter::parse(text).unwrap_or_else(|e| panic!("{text:?} refused: {e}"));
    let mut params = Vec::new();
    let sql = f.render(&mut params);
    (sql, params)
}

fn refused(text: &str) -> FilterError {
    match RowFilter::parse(text) {
        Ok(f) => panic!("{text:?} accepted as {f:?}"),
        Err(e) => e,
    }
}

#[test]
fn literals_are_parameters_and_columns_are_quoted() {
    let (sql, params) = rendered("id > 10 AND name = 'a''b' OR price <= 1.50");
    assert_eq!(
        sql,
        "(((`id` > ?) AND (`name` = ?)) OR (`price` <= CAST(? AS DECIMAL(3,2))))"
    );
    assert_eq!(
        params,
        vec![
            P::Int(10),
            P::Bytes(b"a'b".to_vec()),
            P::Bytes(b"1.50".to_vec())
        ]
    );
}

#[test]
fn a_string_cannot_end_its_quote() {
    // Whatever the text holds, it is one bound value, never SQL.
    let (sql, params) = rendered(r#"name = 'x'' OR 1=1 -- '"#);
    assert_eq!(sql, "(`name` = ?)");
    assert_eq!(params, vec![P::Bytes(b"x' OR 1=1 -- ".to_vec())]);
    let (sql, _) = rendered("`we``ird` IS NULL");
    assert_eq!(sql, "(`we``ird` IS NULL)");
}

#[test]
fn the_accepted_forms() {
    let cases = [
        ("v IS NOT NULL", "(`v` IS NOT NULL)", 0),
        ("id IN (1, 2, 'x', NULL)", "(`id` IN (?, ?, ?, NULL))", 3),
        ("id NOT IN (5)", "(`id` NOT IN (?))", 1),
        ("id BETWEEN 1 AND 9", "(`id` BETWEEN ? AND ?)", 2),
        (
            "id NOT BETWEEN -1 AND 9",
            "(`id` NOT BETWEEN (-?) AND ?)",
            2,
        ),
        ("name LIKE 'a%'", "(`name` LIKE ?)", 1),
        (
            "name NOT LIKE 'a!%%' ESCAPE '!'",
            "(`name` NOT LIKE ? ESCAPE ?)",
            2,
        ),
        (
            "NOT (a = 1 OR b <> 2)",
            "(NOT ((`a` = ?) OR (`b` <> ?)))",
            2,
        ),
        // MySQL's precedence, made explicit by the parentheses of the rendering.
        ("NOT a = 1", "(NOT (`a` = ?))", 1),
        (
            "a = 1 OR b = 2 AND c = 3",
            "((`a` = ?) OR ((`b` = ?) AND (`c` = ?)))",
            3,
        ),
        ("a + b * c > -d", "((`a` + (`b` * `c`)) > (-`d`))", 0),
        (
            "a BETWEEN 1 AND 2 AND b = 1",
            "((`a` BETWEEN ? AND ?) AND (`b` = ?))",
            3,
        ),
        (
            "a = 'x -- y' AND b = '/* z */' AND c = '#'",
            "(((`a` = ?) AND (`b` = ?)) AND (`c` = ?))",
            3,
        ),
        ("a <=> NULL", "(`a` <=> NULL)", 0),
        (
            "(a + 2) * 3 % 4 > b DIV 2",
            "((((`a` + ?) * ?) % ?) > (`b` DIV ?))",
            4,
        ),
        ("flag = TRUE", "(`flag` = TRUE)", 0),
        ("LOWER(name) = 'x'", "(LOWER(`name`) = ?)", 1),
        ("coalesce(a, b, 0) >= 1", "(COALESCE(`a`, `b`, ?) >= ?)", 2),
        ("YEAR(created) = 2024", "(YEAR(`created`) = ?)", 1),
        (
            "created > DATE_SUB(NOW(), INTERVAL 7 DAY)",
            "(`created` > DATE_SUB(NOW(), INTERVAL ? DAY))",
            1,
        ),
        ("d >= CURRENT_DATE", "(`d` >= CURDATE())", 0),
        ("d < CURDATE()", "(`d` < CURDATE())", 0),
        ("x > 1e3", "(`x` > ?)", 1),
        ("x = 18446744073709551615", "(`x` = ?)", 1),
        ("`select` = 1", "(`select` = ?)", 1),
    ];
    for (text, sql, n) in cases {
        let (got, params) = rendered(text);
        assert_eq!(got, sql, "{text}");
        assert_eq!(params.len(), n, "{text}");
    }
}

#[test]
fn the_attacks_are_refused_naming_the_part() {
    let cases = [
        (
            "1=1 UNION SELECT user, password FROM mysql.user",
            "goes on after one condition",
        ),
        (
            "id IN (SELECT id FROM other)",
            "IN takes a list of literals only",
        ),
        ("SLEEP(100) = 0", "the function SLEEP is not allowed"),
        (
            "BENCHMARK(1000000000, MD5('x')) = 0",
            "the function BENCHMARK is not allowed",
        ),
        (
            "LOAD_FILE('/etc/passwd') IS NOT NULL",
            "the function LOAD_FILE is not allowed",
        ),
        ("id = 1; DROP TABLE t", "no `;`"),
        ("id = 1 -- the rest", "comments are not allowed"),
        ("id = 1 /*! OR 1=1 */", "comments are not allowed"),
        ("id = 1 # hash comment", "comments are not allowed"),
        ("id = @x", "variables are not allowed"),
        ("id = @@version", "variables are not allowed"),
        ("other.id = 1", "a qualified name is not allowed"),
        (
            "mysql.user.password = ''",
            "a qualified name is not allowed",
        ),
        ("EXISTS (SELECT 1)", "subqueries are not allowed"),
        ("id = (SELECT MAX(id) FROM t)", "subqueries are not allowed"),
        ("id IN (a, b)", "IN takes a list of literals only"),
        ("id = ?", "placeholders are not allowed"),
        (
            "mysql.sleep(1) = 0",
            "a qualified function name is not allowed",
        ),
        ("UPPER(a, b) = 'x'", "UPPER takes 1 arguments, not 2"),
        ("DATE_ADD(d, 7) > NOW()", "the second argument of DATE_ADD"),
        (
            "DATE_ADD(d, INTERVAL a DAY) > NOW()",
            "the interval's amount is a literal",
        ),
        ("a | 1 = 1", "the operator | is not allowed"),
        ("a = 1 XOR b = 2", "the operator XOR is not allowed"),
        ("a = 'it''s' -- x", "comments are not allowed"),
        ("a = \"q\\\"\" # x", "comments are not allowed"),
        ("", "the filter is empty"),
        ("   ", "the filter is empty"),
        ("id >", "not one SQL condition"),
        ("CAST(a AS CHAR) = 'x'", "this expression is not allowed"),
        (
            "CASE WHEN a THEN 1 END = 1",
            "this expression is not allowed",
        ),
        ("x'41' = a", "only number, string"),
    ];
    for (text, why) in cases {
        let e = refused(text);
        assert!(e.to_string().contains(why), "{text:?}: {e}");
        assert!(
            !e.part.is_empty() || text.trim().is_empty(),
            "{text:?}: no part named"
        );
    }
    assert_eq!(refused("SLEEP(100) = 0").part, "SLEEP(100)");
}

#[test]
fn long_and_deep_filters_are_refused_without_a_crash() {
    let long = format!("a = '{}'", "x".repeat(MAX_FILTER_LEN));
    assert!(refused(&long).reason.contains("bytes long"));
    let deep = format!("{}a = 1{}", "(".repeat(200), ")".repeat(200));
    let e = refused(&deep);
    assert!(
        e.reason.contains("nests deeper") || e.reason.contains("not one SQL condition"),
        "{e}"
    );
    // A long chain of conditions is not deep nesting.
    let chain = vec!["a = 1"; 100].join(" AND ");
    assert_eq!(RowFilter::parse(&chain).unwrap().columns(), vec!["a"]);
    // A multi-byte character at the cut of a long part does not panic.
    let wide = format!("{} = 1", "é".repeat(MAX_FILTER_LEN));
    assert!(refused(&wide).reason.contains("bytes long"));
}

#[test]
fn columns_lists_each_column_once() {
    let f = RowFilter::parse("a > 1 AND (b IS NULL OR LOWER(a) LIKE c)").unwrap();
    assert_eq!(f.columns(), vec!["a", "b", "c"]);
}

#[test]
fn numbers_keep_their_exactness() {
    assert_eq!(number("12"), Some(Literal::Int(12)));
    assert_eq!(
        number("0.000000000000000000000000000001"),
        Some(Literal::Decimal {
            text: "0.000000000000000000000000000001".into(),
            precision: 30,
            scale: 30
        })
    );
    // 31 digits after the point do not fit a DECIMAL.
    assert_eq!(number("0.0000000000000000000000000000001"), None);
    assert_eq!(number("1e999"), None);
    assert!(matches!(number("2.5E-3"), Some(Literal::Double(d)) if d == 0.0025));
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text either is refused or renders SQL in which every character of a string
        /// literal is a parameter: the rendered SQL holds no quote but backquotes.
        #[test]
        fn no_text_reaches_the_sql_unquoted(text in "[ -~]{0,60}") {
            if let Ok(f) = RowFilter::parse(&text) {
                let mut params = Vec::new();
                let rendered = f.render(&mut params);
                // Outside the backquoted column names.
                let sql: String = rendered
                    .split('`')
                    .step_by(2)
                    .collect::<Vec<_>>()
                    .join("``");
                prop_assert!(!sql.contains('\''), "{sql}");
                prop_assert!(!sql.contains('"'), "{sql}");
                prop_assert!(!sql.contains(';'), "{sql}");
                prop_assert!(!sql.contains("--"), "{sql}");
                prop_assert!(!sql.contains("/*"), "{sql}");
                prop_assert_eq!(sql.matches('?').count(), params.len(), "{}", sql);
            }
        }

        /// A string literal of any content round-trips as one parameter.
        #[test]
        fn any_string_is_one_parameter(s in "\\PC{0,40}") {
            let text = format!("a = '{}'", s.replace('\\', "\\\\").replace('\'', "''"));
            let f = RowFilter::parse(&text).unwrap();
            let mut params = Vec::new();
            prop_assert_eq!(f.render(&mut params), "(`a` = ?)");
            prop_assert_eq!(params, vec![P::Bytes(s.into_bytes())]);
        }
    }
}
