//! Bit functions over unsigned 32-bit integers. Anything outside 0..=2^32-1 (or not an
//! integer) gives `null` plus warning 1542.

use quiver_errors::Result;
use serde_json::Value;

use super::{arg, def, FunctionContext, FunctionDef};

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    def("BIT_AND", 1, 2, bit_and),
    def("BIT_CONSTRUCT", 1, 1, bit_construct),
    def("BIT_DECONSTRUCT", 1, 1, bit_deconstruct),
    def("BIT_FROM_STRING", 1, 1, bit_from_string),
    def("BIT_NEGATE", 2, 2, bit_negate),
    def("BIT_OR", 1, 2, bit_or),
    def("BIT_POPCOUNT", 1, 1, bit_popcount),
    def("BIT_SHIFT_LEFT", 3, 3, bit_shift_left),
    def("BIT_SHIFT_RIGHT", 3, 3, bit_shift_right),
    def("BIT_TEST", 2, 2, bit_test),
    def("BIT_TO_STRING", 2, 2, bit_to_string),
    def("BIT_XOR", 1, 2, bit_xor),
];

/// A non-negative number not above `max`; fractions are cut off as in ArangoDB.
fn uint(v: &Value, max: u64) -> Option<u64> {
    let raw = v.as_f64()?;
    let f = raw.trunc();
    (raw >= 0.0 && f <= max as f64).then_some(f as u64)
}

const U32: u64 = u32::MAX as u64;

fn combine(ctx: &mut FunctionContext<'_>, args: &[Value], op: fn(u64, u64) -> u64) -> Value {
    if args.len() == 2 {
        return match (uint(&args[0], U32), uint(&args[1], U32)) {
            (Some(a), Some(b)) => Value::from(op(a, b)),
            _ => ctx.invalid_argument(),
        };
    }
    let Value::Array(items) = arg(args, 0) else {
        return ctx.invalid_argument();
    };
    let mut acc: Option<u64> = None;
    for item in items.iter().filter(|v| !v.is_null()) {
        let Some(x) = uint(item, U32) else {
            return ctx.invalid_argument();
        };
        acc = Some(acc.map_or(x, |a| op(a, x)));
    }
    acc.map_or(Value::Null, Value::from)
}

fn bit_and(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(combine(ctx, args, |a, b| a & b))
}

fn bit_or(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(combine(ctx, args, |a, b| a | b))
}

fn bit_xor(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(combine(ctx, args, |a, b| a ^ b))
}

fn bit_construct(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Value::Array(items) = arg(args, 0) else {
        return Ok(ctx.invalid_argument());
    };
    let mut result: u64 = 0;
    for item in items {
        let Some(pos) = uint(item, 31) else {
            return Ok(ctx.invalid_argument());
        };
        result |= 1 << pos;
    }
    Ok(Value::from(result))
}

fn bit_deconstruct(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(n) = uint(arg(args, 0), U32) else {
        return Ok(ctx.invalid_argument());
    };
    Ok(Value::Array(
        (0..32u64)
            .filter(|i| n & (1 << i) != 0)
            .map(Value::from)
            .collect(),
    ))
}

fn bit_from_string(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Value::String(s) = arg(args, 0) else {
        return Ok(ctx.invalid_argument());
    };
    if s.len() > 32 || !s.bytes().all(|b| b == b'0' || b == b'1') {
        return Ok(ctx.invalid_argument());
    }
    Ok(Value::from(
        s.bytes()
            .fold(0u64, |acc, b| (acc << 1) | u64::from(b - b'0')),
    ))
}

fn mask(bits: u64) -> u64 {
    if bits >= 32 {
        U32
    } else {
        (1u64 << bits) - 1
    }
}

fn bit_negate(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match (uint(arg(args, 0), U32), uint(arg(args, 1), 32)) {
        (Some(n), Some(bits)) => Ok(Value::from(!n & mask(bits))),
        _ => Ok(ctx.invalid_argument()),
    }
}

fn bit_popcount(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match uint(arg(args, 0), U32) {
        Some(n) => Ok(Value::from(n.count_ones())),
        None => Ok(ctx.invalid_argument()),
    }
}

fn shift(ctx: &mut FunctionContext<'_>, args: &[Value], left: bool) -> Value {
    match (
        uint(arg(args, 0), U32),
        uint(arg(args, 1), 32),
        uint(arg(args, 2), 32),
    ) {
        (Some(n), Some(by), Some(bits)) => {
            let shifted = if left { n << by } else { n >> by };
            Value::from(shifted & mask(bits))
        }
        _ => ctx.invalid_argument(),
    }
}

fn bit_shift_left(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(shift(ctx, args, true))
}

fn bit_shift_right(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(shift(ctx, args, false))
}

fn bit_test(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match (uint(arg(args, 0), U32), uint(arg(args, 1), 31)) {
        (Some(n), Some(i)) => Ok(Value::Bool(n & (1 << i) != 0)),
        _ => Ok(ctx.invalid_argument()),
    }
}

fn bit_to_string(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match (uint(arg(args, 0), U32), uint(arg(args, 1), 32)) {
        (Some(n), Some(bits)) => Ok(Value::String(
            (0..bits)
                .rev()
                .map(|i| if n & (1 << i) != 0 { '1' } else { '0' })
                .collect(),
        )),
        _ => Ok(ctx.invalid_argument()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{invalid, ok};
    use serde_json::json;

    #[test]
    fn combining() {
        assert_eq!(ok("BIT_AND", vec![json!([1, 4, 8, 16])]), json!(0));
        assert_eq!(ok("BIT_AND", vec![json!([3, 7, 63])]), json!(3));
        assert_eq!(ok("BIT_AND", vec![json!([255, 127, null, 63])]), json!(63));
        assert_eq!(ok("BIT_AND", vec![json!(127), json!(255)]), json!(127));
        invalid("BIT_AND", vec![json!("foo")]);
        assert_eq!(ok("BIT_OR", vec![json!([1, 4, 8, 16])]), json!(29));
        assert_eq!(ok("BIT_OR", vec![json!([255, 127, null, 63])]), json!(255));
        assert_eq!(ok("BIT_OR", vec![json!(255), json!(127)]), json!(255));
        assert_eq!(ok("BIT_XOR", vec![json!([3, 7, 63])]), json!(59));
        assert_eq!(ok("BIT_XOR", vec![json!([255, 127, null, 63])]), json!(191));
        assert_eq!(ok("BIT_XOR", vec![json!(255), json!(257)]), json!(510));
        assert_eq!(ok("BIT_OR", vec![json!([])]), json!(null));
        invalid("BIT_OR", vec![json!([-1])]);
        invalid("BIT_OR", vec![json!([4294967296u64])]);
        assert_eq!(ok("BIT_OR", vec![json!([1.5, 2])]), json!(3));
        invalid("BIT_OR", vec![json!(["1"])]);
    }

    #[test]
    fn construct_and_inspect() {
        assert_eq!(ok("BIT_CONSTRUCT", vec![json!([1, 2, 3])]), json!(14));
        assert_eq!(ok("BIT_CONSTRUCT", vec![json!([0, 4, 8])]), json!(273));
        assert_eq!(
            ok("BIT_CONSTRUCT", vec![json!([0, 1, 10, 31])]),
            json!(2147484675u64)
        );
        invalid("BIT_CONSTRUCT", vec![json!([32])]);
        assert_eq!(ok("BIT_DECONSTRUCT", vec![json!(14)]), json!([1, 2, 3]));
        assert_eq!(
            ok("BIT_DECONSTRUCT", vec![json!(2147484675u64)]),
            json!([0, 1, 10, 31])
        );
        assert_eq!(ok("BIT_FROM_STRING", vec![json!("0111")]), json!(7));
        assert_eq!(
            ok("BIT_FROM_STRING", vec![json!("000000000000010")]),
            json!(2)
        );
        assert_eq!(
            ok("BIT_FROM_STRING", vec![json!("11010111011101")]),
            json!(13789)
        );
        assert_eq!(
            ok("BIT_FROM_STRING", vec![json!("100000000000000000000")]),
            json!(1048576)
        );
        invalid("BIT_FROM_STRING", vec![json!("0b11")]);
        invalid("BIT_FROM_STRING", vec![json!("1".repeat(33))]);
        assert_eq!(ok("BIT_NEGATE", vec![json!(0), json!(8)]), json!(255));
        assert_eq!(ok("BIT_NEGATE", vec![json!(0), json!(10)]), json!(1023));
        assert_eq!(ok("BIT_NEGATE", vec![json!(3), json!(4)]), json!(12));
        assert_eq!(
            ok("BIT_NEGATE", vec![json!(446359921), json!(32)]),
            json!(3848607374u64)
        );
        assert_eq!(ok("BIT_POPCOUNT", vec![json!(0)]), json!(0));
        assert_eq!(ok("BIT_POPCOUNT", vec![json!(255)]), json!(8));
        assert_eq!(ok("BIT_POPCOUNT", vec![json!(69399252)]), json!(12));
        invalid("BIT_POPCOUNT", vec![json!("foo")]);
        assert_eq!(
            ok("BIT_SHIFT_LEFT", vec![json!(0), json!(1), json!(8)]),
            json!(0)
        );
        assert_eq!(
            ok("BIT_SHIFT_LEFT", vec![json!(7), json!(1), json!(16)]),
            json!(14)
        );
        assert_eq!(
            ok("BIT_SHIFT_LEFT", vec![json!(2), json!(10), json!(16)]),
            json!(2048)
        );
        assert_eq!(
            ok("BIT_SHIFT_LEFT", vec![json!(878836), json!(16), json!(32)]),
            json!(1760821248u64)
        );
        assert_eq!(
            ok("BIT_SHIFT_RIGHT", vec![json!(33), json!(1), json!(16)]),
            json!(16)
        );
        assert_eq!(
            ok("BIT_SHIFT_RIGHT", vec![json!(65536), json!(13), json!(16)]),
            json!(8)
        );
        assert_eq!(
            ok("BIT_SHIFT_RIGHT", vec![json!(878836), json!(4), json!(32)]),
            json!(54927)
        );
        assert_eq!(ok("BIT_TEST", vec![json!(0), json!(3)]), json!(false));
        assert_eq!(ok("BIT_TEST", vec![json!(255), json!(0)]), json!(true));
        assert_eq!(ok("BIT_TEST", vec![json!(7), json!(2)]), json!(true));
        assert_eq!(ok("BIT_TEST", vec![json!(255), json!(8)]), json!(false));
        invalid("BIT_TEST", vec![json!(1), json!(32)]);
        assert_eq!(ok("BIT_TO_STRING", vec![json!(7), json!(4)]), json!("0111"));
        assert_eq!(
            ok("BIT_TO_STRING", vec![json!(255), json!(8)]),
            json!("11111111")
        );
        assert_eq!(
            ok("BIT_TO_STRING", vec![json!(60), json!(8)]),
            json!("00111100")
        );
        assert_eq!(
            ok("BIT_TO_STRING", vec![json!(1048576), json!(32)]),
            json!("00000000000100000000000000000000")
        );
    }
}
