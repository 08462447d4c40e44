//! Numeric functions. Scalar functions cast their argument with `TO_NUMBER`; results that are
//! not finite (LOG(0), SQRT(-1), ...) are `null`. Aggregates take an array, ignore `null`
//! elements and return `null` for other non-numeric elements.

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::{arg, def, volatile, FunctionContext, FunctionDef};
use crate::value::{self, compare, number};

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    def("ABS", 1, 1, abs),
    def("ACOS", 1, 1, acos),
    def("ASIN", 1, 1, asin),
    def("ATAN", 1, 1, atan),
    def("ATAN2", 2, 2, atan2),
    def("AVERAGE", 1, 1, average),
    def("AVG", 1, 1, average),
    def("CEIL", 1, 1, ceil),
    def("COS", 1, 1, cos),
    def("COSINE_SIMILARITY", 2, 2, cosine_similarity),
    def("DECAY_GAUSS", 5, 5, decay_gauss),
    def("DECAY_EXP", 5, 5, decay_exp),
    def("DECAY_LINEAR", 5, 5, decay_linear),
    def("DEGREES", 1, 1, degrees),
    def("EXP", 1, 1, exp),
    def("EXP2", 1, 1, exp2),
    def("FLOOR", 1, 1, floor),
    def("LOG", 1, 1, log),
    def("LOG2", 1, 1, log2),
    def("LOG10", 1, 1, log10),
    def("L1_DISTANCE", 2, 2, l1_distance),
    def("L2_DISTANCE", 2, 2, l2_distance),
    def("MAX", 1, 1, max),
    def("MEDIAN", 1, 1, median),
    def("MIN", 1, 1, min),
    def("PERCENTILE", 2, 3, percentile),
    def("PI", 0, 0, pi),
    def("POW", 2, 2, pow),
    def("PRODUCT", 1, 1, product),
    def("RADIANS", 1, 1, radians),
    volatile("RAND", 0, 0, rand),
    volatile("RANDOM", 0, 0, rand),
    def("RANGE", 2, 3, range),
    def("ROUND", 1, 1, round),
    def("SIN", 1, 1, sin),
    def("SQRT", 1, 1, sqrt),
    def("STDDEV_POPULATION", 1, 1, stddev_population),
    def("STDDEV_SAMPLE", 1, 1, stddev_sample),
    def("STDDEV", 1, 1, stddev_population),
    def("SUM", 1, 1, sum),
    def("TAN", 1, 1, tan),
    def("VARIANCE_POPULATION", 1, 1, variance_population),
    def("VARIANCE_SAMPLE", 1, 1, variance_sample),
    def("VARIANCE", 1, 1, variance_population),
];

fn num(args: &[Value], i: usize) -> f64 {
    value::to_number(arg(args, i))
}

macro_rules! unary {
    ($name:ident, $f:expr) => {
        fn $name(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
            let f: fn(f64) -> f64 = $f;
            Ok(number(f(num(args, 0))))
        }
    };
}

unary!(abs, f64::abs);
unary!(acos, f64::acos);
unary!(asin, f64::asin);
unary!(atan, f64::atan);
unary!(ceil, f64::ceil);
unary!(cos, f64::cos);
unary!(degrees, f64::to_degrees);
unary!(exp, f64::exp);
unary!(exp2, f64::exp2);
unary!(floor, f64::floor);
unary!(radians, f64::to_radians);
unary!(sin, f64::sin);
unary!(sqrt, f64::sqrt);
unary!(tan, f64::tan);
// ArangoDB rounds halves towards positive infinity: ROUND(-2.5) is -2.
unary!(round, |x| (x + 0.5).floor());
unary!(log, |x| if x > 0.0 { x.ln() } else { f64::NAN });
unary!(log2, |x| if x > 0.0 { x.log2() } else { f64::NAN });
unary!(log10, |x| if x > 0.0 { x.log10() } else { f64::NAN });

fn atan2(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(number(num(args, 0).atan2(num(args, 1))))
}

fn pow(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(number(num(args, 0).powf(num(args, 1))))
}

fn pi(_: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    Ok(number(std::f64::consts::PI))
}

fn rand(_: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    Ok(number(rand::random::<f64>()))
}

/// The numeric elements of an aggregate's array argument, nulls skipped. `Err(null)` when the
/// argument is no array (warning 1563) or an element is not a number (warning `bad_element`
/// if given — ArangoDB warns for some aggregates and silently returns null for others).
fn numbers(
    ctx: &mut FunctionContext<'_>,
    v: &Value,
    bad_element: Option<ErrorCode>,
) -> std::result::Result<Vec<f64>, Value> {
    let Value::Array(items) = v else {
        return Err(ctx.array_expected());
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Null => {}
            Value::Number(n) => out.push(n.as_f64().unwrap_or(0.0)),
            _ => {
                return Err(match bad_element {
                    Some(code) => ctx.warn_null(code, ""),
                    None => Value::Null,
                })
            }
        }
    }
    Ok(out)
}

macro_rules! aggregate {
    ($name:ident, $bad:expr, |$xs:ident| $body:expr) => {
        fn $name(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
            match numbers(ctx, arg(args, 0), $bad) {
                Ok($xs) => Ok($body),
                Err(v) => Ok(v),
            }
        }
    };
}

const ARITH: Option<ErrorCode> = Some(ErrorCode::QueryInvalidArithmeticValue);

aggregate!(sum, None, |xs| number(xs.iter().sum()));
aggregate!(product, None, |xs| number(xs.iter().product()));
aggregate!(
    average,
    Some(ErrorCode::QueryArrayExpected),
    |xs| if xs.is_empty() {
        Value::Null
    } else {
        number(xs.iter().sum::<f64>() / xs.len() as f64)
    }
);
aggregate!(median, ARITH, |xs| {
    let mut xs = xs;
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n == 0 {
        Value::Null
    } else if n % 2 == 1 {
        number(xs[n / 2])
    } else {
        number((xs[n / 2 - 1] + xs[n / 2]) / 2.0)
    }
});
aggregate!(variance_population, ARITH, |xs| variance(&xs, false)
    .map_or(Value::Null, number));
aggregate!(variance_sample, ARITH, |xs| variance(&xs, true)
    .map_or(Value::Null, number));
aggregate!(stddev_population, ARITH, |xs| variance(&xs, false)
    .map_or(Value::Null, |v| number(v.sqrt())));
aggregate!(stddev_sample, ARITH, |xs| variance(&xs, true)
    .map_or(Value::Null, |v| number(v.sqrt())));

/// Welford's online algorithm (numerically stable; ArangoDB's results match it to the bit).
fn variance(xs: &[f64], sample: bool) -> Option<f64> {
    let mut mean = 0.0;
    let mut m2 = 0.0;
    for (i, &x) in xs.iter().enumerate() {
        let delta = x - mean;
        mean += delta / (i + 1) as f64;
        m2 += delta * (x - mean);
    }
    let n = xs.len();
    if sample {
        (n >= 2).then(|| m2 / (n - 1) as f64)
    } else {
        (n >= 1).then(|| m2 / n as f64)
    }
}

fn extreme(ctx: &mut FunctionContext<'_>, args: &[Value], want: std::cmp::Ordering) -> Value {
    let Value::Array(items) = arg(args, 0) else {
        return ctx.array_expected();
    };
    let mut best: Option<&Value> = None;
    for item in items.iter().filter(|v| !v.is_null()) {
        if best.is_none_or(|b| compare(item, b) == want) {
            best = Some(item);
        }
    }
    best.cloned().unwrap_or(Value::Null)
}

fn max(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(extreme(ctx, args, std::cmp::Ordering::Greater))
}

fn min(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(extreme(ctx, args, std::cmp::Ordering::Less))
}

fn percentile(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    if !arg(args, 0).is_array() {
        return Ok(ctx.array_expected());
    }
    // ArangoDB 3.12.6 follows NIST: any percentile in [0, 100] is valid.
    let p = match arg(args, 1).as_f64() {
        Some(p) if (0.0..=100.0).contains(&p) => p,
        _ => return Ok(ctx.invalid_argument()),
    };
    let interpolate = match arg(args, 2) {
        Value::Null if args.len() < 3 => false,
        Value::String(m) if m == "rank" => false,
        Value::String(m) if m == "interpolation" => true,
        _ => return Ok(ctx.invalid_argument()),
    };
    let mut xs = match numbers(ctx, arg(args, 0), ARITH) {
        Ok(xs) => xs,
        Err(v) => return Ok(v),
    };
    if xs.is_empty() {
        return Ok(Value::Null);
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let (idx, pos) = if interpolate {
        let idx = p * (n as f64 + 1.0) / 100.0;
        (idx, idx.floor())
    } else {
        let idx = p * n as f64 / 100.0;
        (idx, idx.ceil())
    };
    if n == 1 || pos >= n as f64 {
        return Ok(number(xs[n - 1]));
    }
    if pos <= 0.0 {
        return Ok(number(xs[0]));
    }
    let pos = pos as usize;
    if interpolate {
        Ok(number(
            xs[pos - 1] + (idx - pos as f64) * (xs[pos] - xs[pos - 1]),
        ))
    } else {
        Ok(number(xs[pos - 1]))
    }
}

/// Elements `RANGE()` may produce; larger ranges are refused instead of exhausting memory.
const MAX_RANGE: f64 = 10_000_000.0;

fn range(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let (start, stop, step) = if arg(args, 2).is_null() {
        let start = num(args, 0).trunc();
        let stop = num(args, 1).trunc();
        (start, stop, if start <= stop { 1.0 } else { -1.0 })
    } else {
        (num(args, 0), num(args, 1), num(args, 2))
    };
    if step == 0.0 || (start < stop && step < 0.0) || (start > stop && step > 0.0) {
        return Ok(ctx.invalid_argument());
    }
    let count = ((stop - start) / step).floor() + 1.0;
    if count > MAX_RANGE {
        return Err(Error::with_message(
            ErrorCode::ResourceLimit,
            format!("RANGE() would produce {count} values, more than the limit of {MAX_RANGE}"),
        ));
    }
    // 24 bytes for the array and 16 per number, as `value::estimate_size` counts them.
    ctx.reserve(24 + 16 * count.max(0.0) as u64)?;
    // Accumulate like ArangoDB does, so that fractional steps end on the same value.
    let mut out = Vec::with_capacity(count.max(0.0) as usize + 1);
    let mut x = start;
    while (step > 0.0 && x <= stop) || (step < 0.0 && x >= stop) {
        out.push(number(x));
        x += step;
    }
    Ok(Value::Array(out))
}

/// Applies a vector metric to (vector, vector), or row by row when either argument is a
/// matrix (its first element is an array), as ArangoDB does. Wrong shapes or non-numeric
/// elements give `null` with warning 1542; the metric itself may also reject its input.
fn vector_metric(
    ctx: &mut FunctionContext<'_>,
    args: &[Value],
    metric: fn(&[f64], &[f64]) -> Option<f64>,
) -> Value {
    let (Value::Array(a), Value::Array(b)) = (arg(args, 0), arg(args, 1)) else {
        return ctx.invalid_argument();
    };
    if a.is_empty() || b.is_empty() {
        return ctx.invalid_argument();
    }
    fn vector(items: &[Value]) -> Option<Vec<f64>> {
        items.iter().map(Value::as_f64).collect()
    }
    let one = |ctx: &mut FunctionContext<'_>, x: &[Value], y: &[Value]| -> Option<Value> {
        let (Some(x), Some(y)) = (vector(x), vector(y)) else {
            ctx.invalid_argument();
            return None;
        };
        if x.len() != y.len() {
            ctx.invalid_argument();
            return None;
        }
        match metric(&x, &y) {
            Some(d) => Some(number(d)),
            None => {
                ctx.warn_null(ErrorCode::QueryInvalidArithmeticValue, "");
                None
            }
        }
    };
    let (matrix, vector_arg) = if a[0].is_array() {
        (a, b)
    } else if b[0].is_array() {
        (b, a)
    } else {
        return one(ctx, a, b).unwrap_or(Value::Null);
    };
    let mut out = Vec::with_capacity(matrix.len());
    for row in matrix {
        let Value::Array(row) = row else {
            return ctx.invalid_argument();
        };
        match one(ctx, row, vector_arg) {
            Some(v) => out.push(v),
            None => return Value::Null,
        }
    }
    Value::Array(out)
}

fn cosine(x: &[f64], y: &[f64]) -> Option<f64> {
    let dot: f64 = x.iter().zip(y).map(|(a, b)| a * b).sum();
    let nx: f64 = x.iter().map(|a| a * a).sum::<f64>().sqrt();
    let ny: f64 = y.iter().map(|b| b * b).sum::<f64>().sqrt();
    let denominator = nx * ny;
    (denominator != 0.0).then(|| (dot / denominator).clamp(-1.0, 1.0))
}

fn l1(x: &[f64], y: &[f64]) -> Option<f64> {
    Some(x.iter().zip(y).map(|(a, b)| (a - b).abs()).sum())
}

fn l2(x: &[f64], y: &[f64]) -> Option<f64> {
    Some(
        x.iter()
            .zip(y)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt(),
    )
}

fn cosine_similarity(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(vector_metric(ctx, args, cosine))
}

fn l1_distance(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(vector_metric(ctx, args, l1))
}

fn l2_distance(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(vector_metric(ctx, args, l2))
}

/// Shared shape of the DECAY_* functions: validates parameters and maps a number or an array
/// of numbers through `score(distance beyond offset, scale, decay)`.
fn decay(ctx: &mut FunctionContext<'_>, args: &[Value], score: fn(f64, f64, f64) -> f64) -> Value {
    let params: Option<Vec<f64>> = args[1..].iter().map(Value::as_f64).collect();
    let Some(params) = params else {
        return ctx.invalid_argument();
    };
    let (origin, scale, offset, decay) = (params[0], params[1], params[2], params[3]);
    if scale <= 0.0 || offset < 0.0 || decay <= 0.0 || decay >= 1.0 {
        return ctx.warn_null(ErrorCode::QueryNumberOutOfRange, "");
    }
    let one = |x: f64| number(score(((x - origin).abs() - offset).max(0.0), scale, decay));
    match arg(args, 0) {
        Value::Number(n) => one(n.as_f64().unwrap_or(0.0)),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match item.as_f64() {
                    Some(x) => out.push(one(x)),
                    None => return ctx.invalid_argument(),
                }
            }
            Value::Array(out)
        }
        _ => ctx.invalid_argument(),
    }
}

fn decay_gauss(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(decay(ctx, args, |d, scale, decay| {
        let sigma2 = -(scale * scale) / (2.0 * decay.ln());
        (-(d * d) / (2.0 * sigma2)).exp()
    }))
}

fn decay_exp(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(decay(ctx, args, |d, scale, decay| {
        (decay.ln() / scale * d).exp()
    }))
}

fn decay_linear(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(decay(ctx, args, |d, scale, decay| {
        let s = scale / (1.0 - decay);
        ((s - d) / s).max(0.0)
    }))
}

#[cfg(test)]
// The expected values are the documentation's literal outputs, not approximations of constants.
#[allow(clippy::approx_constant)]
mod tests {
    use super::super::testutil::{error, invalid, ok, warns};
    use serde_json::json;

    #[test]
    fn scalar_functions_from_the_docs() {
        assert_eq!(ok("ABS", vec![json!(-5)]), json!(5));
        assert_eq!(ok("ABS", vec![json!(3.5)]), json!(3.5));
        assert_eq!(ok("ABS", vec![json!("-2")]), json!(2));
        assert_eq!(ok("ACOS", vec![json!(-1)]), json!(3.141592653589793));
        assert_eq!(ok("ACOS", vec![json!(1)]), json!(0));
        assert_eq!(ok("ACOS", vec![json!(2)]), json!(null));
        assert_eq!(ok("ASIN", vec![json!(1)]), json!(1.5707963267948966));
        assert_eq!(ok("ATAN", vec![json!(-1)]), json!(-0.7853981633974483));
        assert_eq!(
            ok("ATAN2", vec![json!(1), json!(1)]),
            json!(0.7853981633974483)
        );
        assert_eq!(
            ok("ATAN2", vec![json!(-10), json!(20)]),
            json!(-0.4636476090008061)
        );
        assert_eq!(ok("CEIL", vec![json!(2.49)]), json!(3));
        assert_eq!(ok("CEIL", vec![json!(-2.51)]), json!(-2));
        assert_eq!(ok("FLOOR", vec![json!(-2.5)]), json!(-3));
        assert_eq!(ok("ROUND", vec![json!(2.49)]), json!(2));
        assert_eq!(ok("ROUND", vec![json!(2.5)]), json!(3));
        assert_eq!(ok("ROUND", vec![json!(-2.5)]), json!(-2));
        assert_eq!(ok("ROUND", vec![json!(-2.51)]), json!(-3));
        assert_eq!(ok("COS", vec![json!(1)]), json!(0.5403023058681398));
        assert_eq!(ok("DEGREES", vec![json!(3.141592653589793)]), json!(180));
        assert_eq!(ok("RADIANS", vec![json!(180)]), json!(3.141592653589793));
        assert_eq!(ok("EXP", vec![json!(1)]), json!(2.718281828459045));
        assert_eq!(ok("EXP", vec![json!(10)]), json!(22026.465794806718));
        assert_eq!(ok("EXP2", vec![json!(16)]), json!(65536));
        assert_eq!(ok("LOG", vec![json!(10)]), json!(2.302585092994046));
        assert_eq!(ok("LOG", vec![json!(0)]), json!(null));
        assert_eq!(ok("LOG2", vec![json!(1024)]), json!(10));
        assert_eq!(ok("LOG10", vec![json!(10000)]), json!(4));
        assert_eq!(ok("LOG10", vec![json!(-1)]), json!(null));
        assert_eq!(ok("PI", vec![]), json!(3.141592653589793));
        assert_eq!(ok("POW", vec![json!(2), json!(4)]), json!(16));
        assert_eq!(ok("POW", vec![json!(5), json!(-1)]), json!(0.2));
        assert_eq!(ok("POW", vec![json!(5), json!(0)]), json!(1));
        assert_eq!(ok("SIN", vec![json!(0)]), json!(0));
        assert_eq!(ok("SQRT", vec![json!(9)]), json!(3));
        assert_eq!(ok("SQRT", vec![json!(2)]), json!(1.4142135623730951));
        assert_eq!(ok("SQRT", vec![json!(-1)]), json!(null));
        assert_eq!(ok("TAN", vec![json!(10)]), json!(0.6483608274590866));
        assert_eq!(ok("ABS", vec![json!(null)]), json!(0));
        let r = ok("RAND", vec![]).as_f64().unwrap_or(-1.0);
        assert!((0.0..1.0).contains(&r));
    }

    #[test]
    fn aggregates_from_the_docs() {
        assert_eq!(ok("AVERAGE", vec![json!([5, 2, 9, 2])]), json!(4.5));
        assert_eq!(ok("AVERAGE", vec![json!([-3, -5, 2])]), json!(-2));
        assert_eq!(
            ok("AVG", vec![json!([999, 80, 4, 4, 4, 3, 3, 3])]),
            json!(137.5)
        );
        assert_eq!(ok("AVERAGE", vec![json!([])]), json!(null));
        assert_eq!(ok("AVERAGE", vec![json!([null, null])]), json!(null));
        warns("AVERAGE", vec![json!([1, "2"])], 1563);
        warns("AVERAGE", vec![json!("x")], 1563);
        assert_eq!(ok("SUM", vec![json!([1, "2"])]), json!(null));
        warns("MEDIAN", vec![json!([1, "2"])], 1561);
        warns("STDDEV", vec![json!([true])], 1561);
        assert_eq!(ok("SUM", vec![json!([1, 2, 3, 4])]), json!(10));
        assert_eq!(ok("SUM", vec![json!([null, -5, 6])]), json!(1));
        assert_eq!(ok("SUM", vec![json!([])]), json!(0));
        assert_eq!(ok("PRODUCT", vec![json!([1, 2, 3, 4])]), json!(24));
        assert_eq!(ok("PRODUCT", vec![json!([null, -5, 6])]), json!(-30));
        assert_eq!(ok("PRODUCT", vec![json!([])]), json!(1));
        assert_eq!(ok("MAX", vec![json!([5, 9, -2, null, 1])]), json!(9));
        assert_eq!(ok("MAX", vec![json!([null, null])]), json!(null));
        assert_eq!(ok("MAX", vec![json!([1, "a", [0]])]), json!([0]));
        assert_eq!(ok("MIN", vec![json!([5, 9, -2, null, 1])]), json!(-2));
        assert_eq!(ok("MIN", vec![json!([])]), json!(null));
        warns("MIN", vec![json!(1)], 1563);
        assert_eq!(ok("MEDIAN", vec![json!([1, 2, 3])]), json!(2));
        assert_eq!(ok("MEDIAN", vec![json!([1, 2, 3, 4])]), json!(2.5));
        assert_eq!(ok("MEDIAN", vec![json!([4, 2, 3, 1])]), json!(2.5));
        assert_eq!(
            ok("MEDIAN", vec![json!([999, 80, 4, 4, 4, 3, 3, 3])]),
            json!(4)
        );
        assert_eq!(
            ok("PERCENTILE", vec![json!([1, 2, 3, 4]), json!(50)]),
            json!(2)
        );
        assert_eq!(
            ok(
                "PERCENTILE",
                vec![json!([1, 2, 3, 4]), json!(50), json!("rank")]
            ),
            json!(2)
        );
        assert_eq!(
            ok(
                "PERCENTILE",
                vec![json!([1, 2, 3, 4]), json!(50), json!("interpolation")]
            ),
            json!(2.5)
        );
        assert_eq!(
            ok("PERCENTILE", vec![json!([1, 2, 3, 4]), json!(100)]),
            json!(4)
        );
        assert_eq!(ok("PERCENTILE", vec![json!([1, 2]), json!(0)]), json!(1));
        invalid("PERCENTILE", vec![json!([1, 2]), json!(101)]);
        invalid("PERCENTILE", vec![json!([1, 2]), json!("50")]);
        assert_eq!(ok("PERCENTILE", vec![json!([7]), json!(10)]), json!(7));
        invalid("PERCENTILE", vec![json!([1, 2]), json!(50), json!("x")]);
        assert_eq!(
            ok("STDDEV_POPULATION", vec![json!([1, 3, 6, 5, 2])]),
            json!(1.854723699099141)
        );
        assert_eq!(
            ok("STDDEV_SAMPLE", vec![json!([1, 3, 6, 5, 2])]),
            json!(2.0736441353327724)
        );
        assert_eq!(
            ok("VARIANCE_POPULATION", vec![json!([1, 3, 6, 5, 2])]),
            json!(3.4400000000000004)
        );
        assert_eq!(
            ok("VARIANCE_SAMPLE", vec![json!([1, 3, 6, 5, 2])]),
            json!(4.300000000000001)
        );
        assert_eq!(ok("VARIANCE_SAMPLE", vec![json!([1])]), json!(null));
        assert_eq!(ok("STDDEV", vec![json!([])]), json!(null));
    }

    #[test]
    fn ranges() {
        assert_eq!(ok("RANGE", vec![json!(1), json!(4)]), json!([1, 2, 3, 4]));
        assert_eq!(
            ok("RANGE", vec![json!(1), json!(4), json!(2)]),
            json!([1, 3])
        );
        assert_eq!(
            ok("RANGE", vec![json!(1), json!(4), json!(3)]),
            json!([1, 4])
        );
        assert_eq!(ok("RANGE", vec![json!(1.5), json!(2.5)]), json!([1, 2]));
        assert_eq!(
            ok("RANGE", vec![json!(1.5), json!(2.5), json!(1)]),
            json!([1.5, 2.5])
        );
        assert_eq!(
            ok("RANGE", vec![json!(1.5), json!(2.5), json!(0.5)]),
            json!([1.5, 2, 2.5])
        );
        assert_eq!(
            ok("RANGE", vec![json!(-0.75), json!(1.1), json!(0.5)]),
            json!([-0.75, -0.25, 0.25, 0.75])
        );
        assert_eq!(ok("RANGE", vec![json!(3), json!(1)]), json!([3, 2, 1]));
        invalid("RANGE", vec![json!(1), json!(3), json!(0)]);
        invalid("RANGE", vec![json!(1), json!(3), json!(-1)]);
        assert_eq!(error("RANGE", vec![json!(0), json!(1e12)]), 32);
    }

    #[test]
    fn vectors() {
        assert_eq!(
            ok("COSINE_SIMILARITY", vec![json!([0, 1]), json!([1, 0])]),
            json!(0)
        );
        assert_eq!(
            ok("COSINE_SIMILARITY", vec![json!([-1, 0]), json!([1, 0])]),
            json!(-1)
        );
        assert_eq!(
            ok(
                "COSINE_SIMILARITY",
                vec![
                    json!([[0, 1, 0, 1], [1, 0, 0, 1], [1, 1, 1, 0], [0, 0, 0, 1]]),
                    json!([1, 1, 1, 1])
                ]
            ),
            json!([
                0.7071067811865475,
                0.7071067811865475,
                0.8660254037844387,
                0.5
            ])
        );
        assert_eq!(
            ok("L1_DISTANCE", vec![json!([-1, -1]), json!([2, 2])]),
            json!(6)
        );
        assert_eq!(
            ok(
                "L1_DISTANCE",
                vec![
                    json!([[1, 2, 3], [-1, -2, -3], [3, 4, 5], [-5, 2, 1]]),
                    json!([1, 1, 1])
                ]
            ),
            json!([3, 9, 9, 7])
        );
        assert_eq!(
            ok("L1_DISTANCE", vec![json!([1.5]), json!([3])]),
            json!(1.5)
        );
        assert_eq!(
            ok("L2_DISTANCE", vec![json!([1, 1]), json!([5, 2])]),
            json!(4.123105625617661)
        );
        assert_eq!(
            ok("L2_DISTANCE", vec![json!([0, 1]), json!([1, 0])]),
            json!(1.4142135623730951)
        );
        invalid("L2_DISTANCE", vec![json!([0, 1]), json!([1])]);
        invalid("L2_DISTANCE", vec![json!([0, "1"]), json!([1, 2])]);
        invalid("COSINE_SIMILARITY", vec![json!([]), json!([])]);
        warns(
            "COSINE_SIMILARITY",
            vec![json!([0, 0]), json!([1, 0])],
            1561,
        );
        // The matrix may also be the second argument.
        assert_eq!(
            ok(
                "L1_DISTANCE",
                vec![json!([1, 1, 1]), json!([[1, 2, 3], [-1, -2, -3]])]
            ),
            json!([3, 9])
        );
    }

    #[test]
    fn decay_functions() {
        assert_eq!(
            ok(
                "DECAY_GAUSS",
                vec![json!(41), json!(40), json!(5), json!(5), json!(0.5)]
            ),
            json!(1)
        );
        let v = ok(
            "DECAY_GAUSS",
            vec![json!([20, 41]), json!(40), json!(5), json!(5), json!(0.5)],
        );
        let first = v[0].as_f64().unwrap_or(0.0);
        assert!((first - 0.001953125).abs() < 1e-12, "{v}");
        assert_eq!(v[1], json!(1));
        assert_eq!(
            ok(
                "DECAY_EXP",
                vec![json!(41), json!(40), json!(5), json!(5), json!(0.7)]
            ),
            json!(1)
        );
        let e = ok(
            "DECAY_EXP",
            vec![json!(2), json!(0), json!(10), json!(0), json!(0.2)],
        );
        assert!((e.as_f64().unwrap_or(0.0) - 0.7247796636776955).abs() < 1e-15);
        let l = ok(
            "DECAY_LINEAR",
            vec![json!(9.8), json!(0), json!(10), json!(0), json!(0.2)],
        );
        assert!((l.as_f64().unwrap_or(0.0) - 0.216).abs() < 1e-12);
        let r = ok(
            "DECAY_LINEAR",
            vec![json!([5, 6, 7]), json!(0), json!(10), json!(0), json!(0.2)],
        );
        assert_eq!(r.as_array().map(Vec::len), Some(3));
        warns(
            "DECAY_LINEAR",
            vec![json!(1), json!(0), json!(0), json!(0), json!(0.2)],
            1504,
        );
        warns(
            "DECAY_EXP",
            vec![json!(1), json!(0), json!(1), json!(0), json!(1.5)],
            1504,
        );
        invalid(
            "DECAY_EXP",
            vec![json!("1"), json!(0), json!(1), json!(0), json!(0.5)],
        );
    }
}
