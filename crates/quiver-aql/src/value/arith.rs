//! AQL arithmetic operators. Operands of any type are cast with `TO_NUMBER` rules; results
//! that are not finite numbers become null; division and modulo by zero yield null plus the
//! warning 1562 (a warning, never an error, as in ArangoDB).

use quiver_errors::ErrorCode;
use serde_json::Value;

use super::{number, to_number, Warning};

/// The binary arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// `a op b`. `Err` carries the warning to report; the operation's value is then null.
pub fn arithmetic(op: ArithOp, a: &Value, b: &Value) -> Result<Value, Warning> {
    // Integer operands stay integers while the result is exact, as in ArangoDB (which
    // checks for overflow and falls back to doubles); this also keeps large ids intact.
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        let exact = match op {
            ArithOp::Add => x.checked_add(y),
            ArithOp::Sub => x.checked_sub(y),
            ArithOp::Mul => x.checked_mul(y),
            ArithOp::Div if y != 0 && x.checked_rem(y) == Some(0) => x.checked_div(y),
            ArithOp::Mod if y != 0 => x.checked_rem(y),
            ArithOp::Div | ArithOp::Mod => None,
        };
        if let Some(r) = exact {
            return Ok(Value::from(r));
        }
    }
    let x = to_number(a);
    let y = to_number(b);
    let r = match op {
        ArithOp::Add => x + y,
        ArithOp::Sub => x - y,
        ArithOp::Mul => x * y,
        ArithOp::Div => {
            if y == 0.0 {
                return Err(Warning::from_code(ErrorCode::QueryDivisionByZero));
            }
            x / y
        }
        ArithOp::Mod => {
            if y == 0.0 {
                return Err(Warning::from_code(ErrorCode::QueryDivisionByZero));
            }
            // Truncated remainder (sign of the dividend), as C's fmod and JavaScript.
            x % y
        }
    };
    Ok(number(r))
}

/// Unary minus.
pub fn negate(a: &Value) -> Value {
    number(-to_number(a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(op: ArithOp, a: Value, b: Value) -> Value {
        arithmetic(op, &a, &b).expect("no warning")
    }

    #[test]
    fn numbers() {
        assert_eq!(ok(ArithOp::Add, json!(1), json!(2)), json!(3));
        assert_eq!(
            ok(ArithOp::Add, json!(0.1), json!(0.2)),
            json!(0.30000000000000004)
        );
        assert_eq!(ok(ArithOp::Sub, json!(1), json!(2.5)), json!(-1.5));
        assert_eq!(ok(ArithOp::Mul, json!(3), json!(-4)), json!(-12));
        assert_eq!(ok(ArithOp::Div, json!(1), json!(4)), json!(0.25));
        assert_eq!(ok(ArithOp::Div, json!(6), json!(3)), json!(2));
        assert!(ok(ArithOp::Div, json!(6), json!(3)).is_i64());
        assert_eq!(ok(ArithOp::Mod, json!(7), json!(3)), json!(1));
        assert_eq!(ok(ArithOp::Mod, json!(-7), json!(3)), json!(-1));
        assert_eq!(ok(ArithOp::Mod, json!(5.5), json!(2)), json!(1.5));
    }

    #[test]
    fn coercion_of_operands() {
        assert_eq!(ok(ArithOp::Add, json!("1"), json!(1)), json!(2));
        assert_eq!(ok(ArithOp::Add, json!(null), json!(1)), json!(1));
        assert_eq!(ok(ArithOp::Add, json!(true), json!(true)), json!(2));
        assert_eq!(ok(ArithOp::Add, json!("abc"), json!(1)), json!(1));
        assert_eq!(ok(ArithOp::Mul, json!([4]), json!("2")), json!(8));
        assert_eq!(ok(ArithOp::Sub, json!({}), json!([1, 2])), json!(0));
        assert_eq!(negate(&json!("5")), json!(-5));
        assert_eq!(negate(&json!([8, 9])), json!(0));
    }

    #[test]
    fn division_by_zero_is_a_warning() {
        for op in [ArithOp::Div, ArithOp::Mod] {
            let w = arithmetic(op, &json!(1), &json!(0)).unwrap_err();
            assert_eq!(w.code, ErrorCode::QueryDivisionByZero);
            let w = arithmetic(op, &json!(1), &json!("x")).unwrap_err();
            assert_eq!(w.code.number(), 1562);
        }
    }

    #[test]
    fn overflow_becomes_null() {
        assert_eq!(ok(ArithOp::Mul, json!(1e308), json!(10)), Value::Null);
        assert_eq!(
            ok(ArithOp::Add, json!(i64::MAX), json!(1)),
            json!(9.223372036854776e18)
        );
    }
}
