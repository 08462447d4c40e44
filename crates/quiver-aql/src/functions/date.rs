//! Date functions. Dates are numeric millisecond timestamps or ISO 8601 strings; everything
//! is computed in UTC on a proleptic Gregorian calendar. Invalid dates give `null` plus warning
//! 1572 ("invalid date value").
//!
//! Timezone arguments name IANA zones (chrono-tz's copy of the tz database): the date is
//! shifted to local time, the operation runs there, and results that are points in time are
//! shifted back, as ArangoDB does. Unknown zone names are error 10 (bad parameter).

use chrono::{DateTime, Datelike, NaiveDateTime, Offset, TimeZone, Timelike};
use chrono_tz::{OffsetComponents, OffsetName, Tz};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use super::{arg, def, volatile, FunctionContext, FunctionDef};
use crate::value;

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    volatile("DATE_NOW", 0, 0, date_now),
    def("DATE_ISO8601", 1, 7, date_iso8601),
    def("DATE_TIMESTAMP", 1, 7, date_timestamp),
    def("DATE_DAYOFWEEK", 1, 2, date_dayofweek),
    def("DATE_YEAR", 1, 2, date_year),
    def("DATE_MONTH", 1, 2, date_month),
    def("DATE_DAY", 1, 2, date_day),
    def("DATE_HOUR", 1, 2, date_hour),
    def("DATE_MINUTE", 1, 2, date_minute),
    def("DATE_SECOND", 1, 1, date_second),
    def("DATE_MILLISECOND", 1, 1, date_millisecond),
    def("DATE_DAYOFYEAR", 1, 2, date_dayofyear),
    def("DATE_ISOWEEK", 1, 2, date_isoweek),
    def("DATE_ISOWEEKYEAR", 1, 2, date_isoweekyear),
    def("DATE_LEAPYEAR", 1, 2, date_leapyear),
    def("DATE_QUARTER", 1, 2, date_quarter),
    def("DATE_DAYS_IN_MONTH", 1, 2, date_days_in_month),
    def("DATE_TRUNC", 2, 3, date_trunc),
    def("DATE_ROUND", 3, 4, date_round),
    def("DATE_FORMAT", 2, 3, date_format),
    def("DATE_ADD", 2, 4, date_add),
    def("DATE_SUBTRACT", 2, 4, date_subtract),
    def("DATE_DIFF", 3, 6, date_diff),
    def("DATE_COMPARE", 3, 6, date_compare),
    def("DATE_UTCTOLOCAL", 2, 3, date_utctolocal),
    def("DATE_LOCALTOUTC", 2, 3, date_localtoutc),
    def("DATE_TIMEZONE", 0, 0, date_timezone),
    def("DATE_TIMEZONES", 0, 0, date_timezones),
];

/// Valid range of timestamps: 0000-01-01T00:00:00.000Z ..= 9999-12-31T23:59:59.999Z.
const MIN_MS: i64 = -62_167_219_200_000;
const MAX_MS: i64 = 253_402_300_799_999;

const MS_SECOND: i64 = 1000;
const MS_MINUTE: i64 = 60 * MS_SECOND;
const MS_HOUR: i64 = 60 * MS_MINUTE;
const MS_DAY: i64 = 24 * MS_HOUR;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm); months
/// outside 1..=12 are normalised first so that callers can overflow components.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let total_months = year * 12 + (month - 1);
    let y = total_months.div_euclid(12);
    let m = total_months.rem_euclid(12) + 1;
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 + (day - 1)
}

fn in_range(ms: i64) -> Option<i64> {
    (MIN_MS..=MAX_MS).contains(&ms).then_some(ms)
}

/// Parses a date string exactly as ArangoDB's date parser accepts it: surrounding whitespace
/// is ignored, an optional leading `+` (never `-`), a year of up to four significant digits,
/// optional `-M` and `-D` (one or two digits), an optional time `(T| )H:M[:S[.fff…]]` (hours
/// and minutes one or two digits, only the first three fraction digits count) and an optional
/// `Z` or `±HH:MM` offset. Days beyond the month's end overflow into the next month
/// (`2015-02-31` is March 3rd), as ArangoDB's calendar arithmetic does.
pub(crate) fn parse_date_string(text: &str) -> Option<i64> {
    let t = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let t = match t.as_bytes().first() {
        Some(b'+') => &t[1..],
        Some(b'-') => return None,
        _ => t,
    };
    let b = t.as_bytes();
    let mut i = 0;
    // Digits at `i`: (value, count); the value saturates instead of overflowing.
    let number = |i: &mut usize| -> (i64, usize) {
        let start = *i;
        let mut v: i64 = 0;
        while *i < b.len() && b[*i].is_ascii_digit() {
            v = v.saturating_mul(10).saturating_add(i64::from(b[*i] - b'0'));
            *i += 1;
        }
        (v, *i - start)
    };
    let year_start = i;
    let (year, len) = number(&mut i);
    if len == 0 || year > 9999 {
        return None;
    }
    if len > 4 {
        // More than four digits only as leading zeroes.
        let zeros = b[year_start..].iter().take_while(|&&c| c == b'0').count();
        if len - zeros > 4 {
            return None;
        }
    }
    let (mut month, mut day) = (1, 1);
    if i < b.len() && b[i] == b'-' {
        i += 1;
        let (m, len) = number(&mut i);
        if len == 0 || len > 2 || !(1..=12).contains(&m) {
            return None;
        }
        month = m;
        if i < b.len() && b[i] == b'-' {
            i += 1;
            let (d, len) = number(&mut i);
            if len == 0 || len > 2 || !(1..=31).contains(&d) {
                return None;
            }
            day = d;
        }
    }
    let mut ms_of_day = 0;
    if i < b.len() && (b[i] == b' ' || b[i] == b'T') {
        i += 1;
        let (hour, len) = number(&mut i);
        if len == 0 || len > 2 || hour > 23 {
            return None;
        }
        if i >= b.len() || b[i] != b':' {
            return None;
        }
        i += 1;
        let (minute, len) = number(&mut i);
        if len == 0 || len > 2 || minute > 59 {
            return None;
        }
        let (mut second, mut millis) = (0, 0);
        if i < b.len() && b[i] == b':' {
            i += 1;
            let (sec, len) = number(&mut i);
            if len == 0 || len > 2 || sec > 59 {
                return None;
            }
            second = sec;
            if i < b.len() && b[i] == b'.' {
                i += 1;
                let start = i;
                let (_, len) = number(&mut i);
                if len == 0 {
                    return None;
                }
                let digits = &t[start..start + len.min(3)];
                millis = digits.parse::<i64>().ok()? * 10i64.pow(3 - digits.len() as u32);
            }
        }
        ms_of_day = hour * MS_HOUR + minute * MS_MINUTE + second * MS_SECOND + millis;
    }
    let mut offset = 0;
    if i < b.len() {
        match b[i] {
            b'Z' | b'z' => i += 1,
            b'+' | b'-' => {
                let sign = if b[i] == b'-' { -1 } else { 1 };
                i += 1;
                let (hours, len) = number(&mut i);
                if len == 0 || len > 2 || hours > 23 {
                    return None;
                }
                if i >= b.len() || b[i] != b':' {
                    return None;
                }
                i += 1;
                let (minutes, len) = number(&mut i);
                if len == 0 || len > 2 || minutes > 59 {
                    return None;
                }
                offset = sign * (hours * MS_HOUR + minutes * MS_MINUTE);
            }
            _ => return None,
        }
    }
    if i != b.len() {
        return None;
    }
    let ms = days_from_civil(year, month, day) * MS_DAY + ms_of_day - offset;
    in_range(ms)
}

pub(crate) fn is_date_string(text: &str) -> bool {
    parse_date_string(text).is_some()
}

/// A date argument as a timestamp, or None when it is not a valid date.
fn to_millis(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => {
            let f = n.as_f64()?;
            if !f.is_finite() {
                return None;
            }
            in_range(f.trunc() as i64).filter(|_| f.abs() < 1e15)
        }
        Value::String(s) => parse_date_string(s),
        _ => None,
    }
}

/// The date argument at `i` as a timestamp. Registers ArangoDB's warning and returns None
/// otherwise: 1542 for values that are neither numbers nor strings, 1572 for invalid dates.
fn date_arg(ctx: &mut FunctionContext<'_>, args: &[Value], i: usize) -> Option<i64> {
    let v = arg(args, i);
    if !(v.is_number() || v.is_string()) {
        ctx.invalid_argument();
        return None;
    }
    let ms = to_millis(v);
    if ms.is_none() {
        invalid_date(ctx);
    }
    ms
}

fn datetime(ms: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_millis(ms).map(|d| d.naive_utc())
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a timestamp.
pub(crate) fn iso_from_millis(ms: i64) -> Option<String> {
    let dt = datetime(in_range(ms)?)?;
    Some(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.nanosecond() / 1_000_000
    ))
}

fn invalid_date(ctx: &mut FunctionContext<'_>) -> Value {
    ctx.warn_null(ErrorCode::QueryInvalidDateValue, "")
}

/// A timezone argument.
#[derive(Clone, Copy)]
enum Zone {
    Utc,
    Named(Tz),
}

/// Resolves a timezone name; unknown names are an error, as in ArangoDB.
fn zone_named(ctx: &FunctionContext<'_>, name: &str) -> Result<Zone> {
    if name == "UTC" {
        return Ok(Zone::Utc);
    }
    name.parse::<Tz>().map(Zone::Named).map_err(|_| {
        Error::with_message(
            ErrorCode::BadParameter,
            format!(
                "unknown timezone '{name}' in call to function '{}()'",
                ctx.function_name()
            ),
        )
    })
}

/// The timezone argument at `i`: UTC when absent, None (after warning 1542) when it is not a
/// string.
fn zone_arg(ctx: &mut FunctionContext<'_>, args: &[Value], i: usize) -> Result<Option<Zone>> {
    match args.get(i) {
        None => Ok(Some(Zone::Utc)),
        Some(Value::String(name)) => zone_named(ctx, name).map(Some),
        Some(_) => {
            ctx.invalid_argument();
            Ok(None)
        }
    }
}

/// Milliseconds local time is ahead of UTC at the UTC instant `utc_ms`.
fn offset_ms(zone: Zone, utc_ms: i64) -> i64 {
    match zone {
        Zone::Utc => 0,
        Zone::Named(tz) => tz
            .timestamp_millis_opt(utc_ms)
            .single()
            .map_or(0, |t| i64::from(t.offset().fix().local_minus_utc()) * 1000),
    }
}

/// UTC instant to local wall-clock milliseconds.
fn localize(zone: Zone, utc_ms: i64) -> i64 {
    utc_ms + offset_ms(zone, utc_ms)
}

/// Local wall-clock milliseconds back to a UTC instant. Ambiguous times take the earlier
/// instant; times inside a gap use the offset in force before the gap.
fn unlocalize(zone: Zone, local_ms: i64) -> i64 {
    let Zone::Named(tz) = zone else {
        return local_ms;
    };
    let Some(naive) = datetime(local_ms) else {
        return local_ms;
    };
    match tz.from_local_datetime(&naive) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.timestamp_millis()
        }
        chrono::LocalResult::None => local_ms - offset_ms(zone, local_ms - MS_DAY),
    }
}

/// ArangoDB's `zoneInfo` for the period of `zone` containing `utc_ms`.
fn zone_info(zone: Zone, utc_ms: i64) -> Value {
    let Zone::Named(tz) = zone else {
        return json!({"name": "UTC", "begin": null, "end": null, "dst": false, "offset": 0});
    };
    let Some(t) = tz.timestamp_millis_opt(utc_ms).single() else {
        return Value::Null;
    };
    let offset = t.offset();
    let key = |ms: i64| {
        tz.timestamp_millis_opt(ms).single().map(|x| {
            (
                x.offset().fix().local_minus_utc(),
                x.offset().abbreviation().map(str::to_string),
            )
        })
    };
    let here = key(utc_ms);
    // Transitions are found by stepping a day at a time (bounded to two years each way) and
    // then bisecting to the millisecond.
    let find = |direction: i64| -> Option<i64> {
        let mut inside = utc_ms;
        for _ in 0..730 {
            let probe = inside + direction * MS_DAY;
            if !(MIN_MS..=MAX_MS).contains(&probe) {
                return None;
            }
            if key(probe) != here {
                let (mut a, mut b) = (inside, probe);
                while (b - a).abs() > 1 {
                    let mid = a + (b - a) / 2;
                    if key(mid) == here {
                        a = mid;
                    } else {
                        b = mid;
                    }
                }
                // `begin` is the first instant of the period, `end` the first after it.
                return Some(if direction < 0 { a } else { b });
            }
            inside = probe;
        }
        None
    };
    json!({
        "name": offset.abbreviation().unwrap_or(""),
        "begin": find(-1).and_then(iso_from_millis),
        "end": find(1).and_then(iso_from_millis),
        "dst": offset.dst_offset().num_seconds() != 0,
        "offset": offset.fix().local_minus_utc(),
    })
}

/// Common shape of the component extractors: date (and optional UTC timezone) in, number out.
fn extract(
    ctx: &mut FunctionContext<'_>,
    args: &[Value],
    f: fn(&NaiveDateTime) -> Value,
) -> Result<Value> {
    let Some(ms) = date_arg(ctx, args, 0) else {
        return Ok(Value::Null);
    };
    let Some(zone) = zone_arg(ctx, args, 1)? else {
        return Ok(Value::Null);
    };
    Ok(datetime(localize(zone, ms)).map_or(Value::Null, |dt| f(&dt)))
}

fn date_now(_: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    Ok(Value::from(now))
}

/// Timestamp from `DATE_TIMESTAMP`/`DATE_ISO8601` arguments: one date, or components
/// (numbers or numeric strings; hours and smaller units overflow into larger ones).
fn timestamp_from_args(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Option<i64> {
    if args.len() == 1 {
        return date_arg(ctx, args, 0);
    }
    if args.len() < 3 || args.iter().any(|a| !(a.is_number() || a.is_string())) {
        ctx.invalid_argument();
        return None;
    }
    let mut parts = [0i64; 7];
    for (i, a) in args.iter().enumerate().take(7) {
        let f = value::to_number(a);
        parts[i] = if f.is_finite() {
            f.trunc().clamp(-1e9, 1e9) as i64
        } else {
            0
        };
    }
    let [y, m, d, h, i, s, f] = parts;
    if !(0..=9999).contains(&y) || parts.iter().skip(1).any(|p| *p < 0) {
        invalid_date(ctx);
        return None;
    }
    let ms = days_from_civil(y, m, d) * MS_DAY
        + h * MS_HOUR
        + i * MS_MINUTE
        + s * MS_SECOND
        + f.min(999);
    let ms = in_range(ms);
    if ms.is_none() {
        invalid_date(ctx);
    }
    ms
}

fn date_iso8601(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(timestamp_from_args(ctx, args)
        .and_then(iso_from_millis)
        .map_or(Value::Null, Value::String))
}

fn date_timestamp(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(timestamp_from_args(ctx, args).map_or(Value::Null, Value::from))
}

fn date_dayofweek(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| {
        Value::from(d.weekday().num_days_from_sunday())
    })
}

fn date_year(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from(d.year()))
}

fn date_month(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from(d.month()))
}

fn date_day(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from(d.day()))
}

fn date_hour(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from(d.hour()))
}

fn date_minute(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from(d.minute()))
}

fn date_second(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from(d.second()))
}

fn date_millisecond(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from(d.nanosecond() / 1_000_000))
}

fn date_dayofyear(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from(d.ordinal()))
}

fn date_isoweek(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from(d.iso_week().week()))
}

fn date_isoweekyear(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(
        ctx,
        args,
        |d| json!({"week": d.iso_week().week(), "year": d.iso_week().year()}),
    )
}

fn is_leap(year: i32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(year) => 29,
        _ => 28,
    }
}

fn date_leapyear(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::Bool(is_leap(d.year())))
}

fn date_quarter(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| Value::from((d.month() - 1) / 3 + 1))
}

fn date_days_in_month(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    extract(ctx, args, |d| {
        Value::from(days_in_month(d.year(), d.month()))
    })
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Unit {
    Year,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
}

fn unit(v: &Value) -> Option<Unit> {
    let Value::String(s) = v else { return None };
    Some(match s.to_ascii_lowercase().as_str() {
        "y" | "year" | "years" => Unit::Year,
        "m" | "month" | "months" => Unit::Month,
        "w" | "week" | "weeks" => Unit::Week,
        "d" | "day" | "days" => Unit::Day,
        "h" | "hour" | "hours" => Unit::Hour,
        "i" | "minute" | "minutes" => Unit::Minute,
        "s" | "second" | "seconds" => Unit::Second,
        "f" | "millisecond" | "milliseconds" => Unit::Millisecond,
        _ => return None,
    })
}

fn unit_millis(u: Unit) -> f64 {
    const YEAR: f64 = 365.2425 * MS_DAY as f64;
    match u {
        Unit::Year => YEAR,
        Unit::Month => YEAR / 12.0,
        Unit::Week => (7 * MS_DAY) as f64,
        Unit::Day => MS_DAY as f64,
        Unit::Hour => MS_HOUR as f64,
        Unit::Minute => MS_MINUTE as f64,
        Unit::Second => MS_SECOND as f64,
        Unit::Millisecond => 1.0,
    }
}

fn iso_or_invalid(ctx: &mut FunctionContext<'_>, ms: Option<i64>) -> Value {
    match ms.and_then(iso_from_millis) {
        Some(s) => Value::String(s),
        None => invalid_date(ctx),
    }
}

fn date_trunc(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(ms) = date_arg(ctx, args, 0) else {
        return Ok(Value::Null);
    };
    let Some(zone) = zone_arg(ctx, args, 2)? else {
        return Ok(Value::Null);
    };
    let local = localize(zone, ms);
    let (Some(u), Some(dt)) = (unit(arg(args, 1)), datetime(local)) else {
        return Ok(ctx.invalid_argument());
    };
    let truncated = match u {
        Unit::Year => days_from_civil(i64::from(dt.year()), 1, 1) * MS_DAY,
        Unit::Month => days_from_civil(i64::from(dt.year()), i64::from(dt.month()), 1) * MS_DAY,
        Unit::Week => return Ok(ctx.invalid_argument()),
        other => local - local.rem_euclid(unit_millis(other) as i64),
    };
    Ok(iso_or_invalid(ctx, Some(unlocalize(zone, truncated))))
}

fn date_round(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(ms) = date_arg(ctx, args, 0) else {
        return Ok(Value::Null);
    };
    let Value::Number(amount) = arg(args, 1) else {
        return Ok(ctx.invalid_argument());
    };
    let Value::String(u) = arg(args, 2) else {
        return Ok(ctx.invalid_argument());
    };
    let Some(zone) = zone_arg(ctx, args, 3)? else {
        return Ok(Value::Null);
    };
    let ms = localize(zone, ms);
    let amount = amount.as_f64().unwrap_or(0.0).trunc();
    // ArangoDB matches these unit names case-sensitively here.
    let factor = match u.as_str() {
        "milliseconds" | "millisecond" | "f" => 1,
        "seconds" | "second" | "s" => MS_SECOND,
        "minutes" | "minute" | "i" => MS_MINUTE,
        "hours" | "hour" | "h" => MS_HOUR,
        "days" | "day" | "d" => MS_DAY,
        _ => return Ok(ctx.invalid_argument()),
    };
    if !(1.0..=1e12).contains(&amount) {
        return Ok(ctx.invalid_argument());
    }
    let bucket = factor.saturating_mul(amount as i64);
    // Integer division truncates towards the epoch, as in ArangoDB.
    Ok(iso_or_invalid(
        ctx,
        Some(unlocalize(zone, ms / bucket * bucket)),
    ))
}

/// Adds calendar months (day-of-month overflow rolls into the next month, as ArangoDB's date
/// library does) and then a fixed number of milliseconds.
pub(crate) fn add_calendar(ms: i64, months: i64, millis: i64) -> Option<i64> {
    // Anything this large leaves the valid date range anyway; bailing out early keeps the
    // arithmetic below far from overflow.
    if months.unsigned_abs() > 1_000_000 || millis.unsigned_abs() > 1_000_000_000_000_000 {
        return None;
    }
    let dt = datetime(ms)?;
    let ms_of_day = ms.rem_euclid(MS_DAY);
    let days = days_from_civil(
        i64::from(dt.year()),
        i64::from(dt.month()) + months,
        i64::from(dt.day()),
    );
    in_range(days.checked_mul(MS_DAY)?.checked_add(ms_of_day + millis)?)
}

/// An ISO 8601 duration `P[nY][nM][nW][nD][T[nH][nM][n[.fff]S]]` as (months, milliseconds),
/// with ArangoDB's grammar: whole numbers in this order, a fraction only on seconds (its first
/// three digits are milliseconds).
pub(crate) fn parse_duration(text: &str) -> Option<(i64, i64)> {
    let b = text.as_bytes();
    if b.len() <= 1 || b[0] != b'P' {
        return None;
    }
    let mut i = 1;
    let number = |i: &mut usize| -> Option<i64> {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        if *i == start || *i - start > 9 {
            return None;
        }
        text[start..*i].parse().ok()
    };
    let (mut months, mut millis) = (0i64, 0i64);
    // Date part: each designator at most once, in order.
    for (designator, factor_months, factor_ms) in [
        (b'Y', 12, 0),
        (b'M', 1, 0),
        (b'W', 0, 7 * MS_DAY),
        (b'D', 0, MS_DAY),
    ] {
        let save = i;
        if let Some(n) = number(&mut i) {
            if i < b.len() && b[i] == designator {
                i += 1;
                months += n * factor_months;
                millis += n * factor_ms;
                continue;
            }
        }
        i = save;
    }
    if i < b.len() && b[i] == b'T' {
        i += 1;
        for (designator, factor_ms) in [(b'H', MS_HOUR), (b'M', MS_MINUTE)] {
            let save = i;
            if let Some(n) = number(&mut i) {
                if i < b.len() && b[i] == designator {
                    i += 1;
                    millis += n * factor_ms;
                    continue;
                }
            }
            i = save;
        }
        let save = i;
        if let Some(n) = number(&mut i) {
            let mut fraction = 0;
            if i < b.len() && b[i] == b'.' {
                i += 1;
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if i == start {
                    return None;
                }
                let digits = &text[start..i.min(start + 3)];
                fraction = digits.parse::<i64>().ok()? * 10i64.pow(3 - digits.len() as u32);
            }
            if i < b.len() && b[i] == b'S' {
                i += 1;
                millis += n * MS_SECOND + fraction;
            } else {
                i = save;
            }
        }
    }
    (i == b.len()).then_some((months, millis))
}

fn shift(ctx: &mut FunctionContext<'_>, args: &[Value], sign: i64) -> Result<Value> {
    let Some(ms) = date_arg(ctx, args, 0) else {
        return Ok(Value::Null);
    };
    // As ArangoDB: (date, amount, unit[, tz]) or (date, isoDuration[, tz]); with three
    // arguments the form is told apart by the second one being a string.
    let timezoned = args.len() == 4 || (args.len() == 3 && args[1].is_string());
    let zone = if timezoned {
        let Some(zone) = zone_arg(ctx, args, if args.len() == 4 { 3 } else { 2 })? else {
            return Ok(Value::Null);
        };
        zone
    } else {
        Zone::Utc
    };
    let local = localize(zone, ms);
    let (months, millis) = if (args.len() == 3 && !timezoned) || args.len() == 4 {
        let Value::Number(amount) = &args[1] else {
            return Ok(ctx.invalid_argument());
        };
        if !args[2].is_string() {
            return Ok(ctx.invalid_argument());
        }
        let Some(u) = unit(&args[2]) else {
            return Ok(invalid_date(ctx));
        };
        let amount = amount.as_f64().unwrap_or(0.0);
        let negative = amount < 0.0;
        let mut rest = amount.abs();
        let mut months = 0i64;
        let mut millis = 0f64;
        // Fractions cascade like ArangoDB: a year fraction becomes months, a month fraction
        // becomes 30-day units.
        match u {
            Unit::Year | Unit::Month => {
                if u == Unit::Year {
                    months += (rest.trunc() as i64).saturating_mul(12);
                    rest = rest.fract() * 12.0;
                }
                months += rest.trunc() as i64;
                millis += rest.fract() * 30.0 * MS_DAY as f64;
            }
            other => millis += rest * unit_millis(other),
        }
        let millis = millis.trunc() as i64;
        if negative {
            (-months, -millis)
        } else {
            (months, millis)
        }
    } else {
        let Value::String(duration) = &args[1] else {
            return Ok(ctx.invalid_argument());
        };
        match parse_duration(duration) {
            Some(parsed) => parsed,
            None => return Ok(invalid_date(ctx)),
        }
    };
    let shifted = add_calendar(local, sign * months, sign * millis).map(|l| unlocalize(zone, l));
    Ok(iso_or_invalid(ctx, shifted))
}

fn date_add(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    shift(ctx, args, 1)
}

fn date_subtract(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    shift(ctx, args, -1)
}

fn date_diff(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(mut a) = date_arg(ctx, args, 0) else {
        return Ok(Value::Null);
    };
    let Some(mut b) = date_arg(ctx, args, 1) else {
        return Ok(Value::Null);
    };
    if !arg(args, 2).is_string() {
        return Ok(ctx.invalid_argument());
    }
    // Argument 4 is `asFloat` or the first timezone; the timezones that follow apply as in
    // ArangoDB (one zone for both dates, or one per date).
    let mut as_float = false;
    if args.len() > 3 {
        match &args[3] {
            Value::Bool(f) => as_float = *f,
            Value::String(name) => {
                let zone = zone_named(ctx, name)?;
                a = localize(zone, a);
                if args.len() == 4 {
                    b = localize(zone, b);
                }
            }
            _ => return Ok(ctx.invalid_argument()),
        }
        if args.len() > 4 {
            let Value::String(name) = &args[4] else {
                return Ok(ctx.invalid_argument());
            };
            let zone = zone_named(ctx, name)?;
            if args[3].is_boolean() {
                a = localize(zone, a);
                if args.len() == 5 {
                    b = localize(zone, b);
                }
            } else {
                b = localize(zone, b);
            }
            if args.len() == 6 {
                let Value::String(name) = &args[5] else {
                    return Ok(ctx.invalid_argument());
                };
                b = localize(zone_named(ctx, name)?, b);
            }
        }
    }
    let Some(u) = unit(arg(args, 2)) else {
        return Ok(invalid_date(ctx));
    };
    let diff = (b - a) as f64 / unit_millis(u);
    if as_float {
        Ok(value::number(diff))
    } else {
        Ok(value::number(diff.round()))
    }
}

fn date_compare(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(mut a) = date_arg(ctx, args, 0) else {
        return Ok(Value::Null);
    };
    let Some(mut b) = date_arg(ctx, args, 1) else {
        return Ok(Value::Null);
    };
    let Some(start) = unit(arg(args, 2)).filter(|u| *u != Unit::Week) else {
        return Ok(ctx.invalid_argument());
    };
    let mut end = start;
    if args.len() > 3 {
        // The 4th argument is the end unit, or else already the first timezone.
        let (start_tz, end_tz) = match unit(&args[3]).filter(|u| *u != Unit::Week) {
            None => match args.len() {
                4 => (3, 3),
                5 => (3, 4),
                _ => return Ok(ctx.invalid_argument()),
            },
            Some(u) => {
                end = u;
                match args.len() {
                    5 => (4, 4),
                    6 => (4, 5),
                    _ => (0, 0),
                }
            }
        };
        if start_tz > 0 {
            let Value::String(name) = &args[start_tz] else {
                return Ok(ctx.invalid_argument());
            };
            let zone = zone_named(ctx, name)?;
            a = localize(zone, a);
            let Value::String(name) = &args[end_tz] else {
                return Ok(ctx.invalid_argument());
            };
            b = localize(zone_named(ctx, name)?, b);
        }
    }
    if end < start {
        return Ok(ctx.invalid_argument());
    }
    let (Some(a), Some(b)) = (datetime(a), datetime(b)) else {
        return Ok(invalid_date(ctx));
    };
    let component = |d: &NaiveDateTime, u: Unit| -> i64 {
        match u {
            Unit::Year => i64::from(d.year()),
            Unit::Month => i64::from(d.month()),
            Unit::Day | Unit::Week => i64::from(d.day()),
            Unit::Hour => i64::from(d.hour()),
            Unit::Minute => i64::from(d.minute()),
            Unit::Second => i64::from(d.second()),
            Unit::Millisecond => i64::from(d.nanosecond() / 1_000_000),
        }
    };
    let units = [
        Unit::Year,
        Unit::Month,
        Unit::Day,
        Unit::Hour,
        Unit::Minute,
        Unit::Second,
        Unit::Millisecond,
    ];
    Ok(Value::Bool(
        units
            .iter()
            .filter(|u| **u >= start && **u <= end)
            .all(|u| component(&a, *u) == component(&b, *u)),
    ))
}

fn date_utctolocal(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    convert_zone(ctx, args, true)
}

fn date_localtoutc(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    convert_zone(ctx, args, false)
}

/// DATE_UTCTOLOCAL / DATE_LOCALTOUTC. Local times print without the `Z` unless the zone is
/// at UTC without daylight saving at that moment, as in ArangoDB.
fn convert_zone(ctx: &mut FunctionContext<'_>, args: &[Value], to_local: bool) -> Result<Value> {
    let Some(ms) = date_arg(ctx, args, 0) else {
        return Ok(Value::Null);
    };
    let Value::String(name) = arg(args, 1) else {
        return Ok(ctx.invalid_argument());
    };
    let detail = match args.get(2) {
        None => false,
        Some(Value::Bool(d)) => *d,
        Some(_) => return Ok(ctx.invalid_argument()),
    };
    let zone = zone_named(ctx, name)?;
    let (text, utc_instant, field) = if to_local {
        let local = localize(zone, ms);
        let at_utc = offset_ms(zone, ms) == 0
            && match zone {
                Zone::Utc => true,
                Zone::Named(tz) => tz
                    .timestamp_millis_opt(ms)
                    .single()
                    .is_some_and(|t| t.offset().dst_offset().num_seconds() == 0),
            };
        let Some(mut iso) = iso_from_millis(local) else {
            return Ok(invalid_date(ctx));
        };
        if !at_utc {
            iso.pop();
        }
        (iso, ms, "local")
    } else {
        let utc = unlocalize(zone, ms);
        let Some(iso) = iso_from_millis(utc) else {
            return Ok(invalid_date(ctx));
        };
        (iso, utc, "utc")
    };
    if !detail {
        return Ok(Value::String(text));
    }
    let mut out = serde_json::Map::new();
    out.insert(field.to_string(), Value::String(text));
    out.insert(
        "tzdb".into(),
        Value::String(chrono_tz::IANA_TZDB_VERSION.to_string()),
    );
    out.insert("zoneInfo".into(), zone_info(zone, utc_instant));
    Ok(Value::Object(out))
}

fn date_timezone(_: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    Ok(Value::String("Etc/UTC".into()))
}

fn date_timezones(_: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    Ok(Value::Array(
        chrono_tz::TZ_VARIANTS
            .iter()
            .map(|tz| Value::String(tz.name().to_string()))
            .collect(),
    ))
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Placeholders, longest first so that `%yyyy` wins over `%yy` and `%y`.
const PLACEHOLDERS: [&str; 32] = [
    "yyyyyy", "yyyy", "yy", "y", "mmmm", "mmm", "mm", "m", "wwww", "www", "w", "dd", "d", "hh",
    "h", "ii", "i", "ss", "s", "fff", "f", "xxx", "x", "kk", "k", "l", "q", "a", "t", "z", "&",
    "%",
];

fn format_date(ms: i64, dt: &NaiveDateTime, format: &str) -> String {
    let mut out = String::with_capacity(format.len() + 16);
    let mut rest = format;
    while let Some(pos) = rest.find('%') {
        out.push_str(&rest[..pos]);
        rest = &rest[pos + 1..];
        let lower = rest.to_ascii_lowercase();
        let Some(token) = PLACEHOLDERS.iter().find(|p| lower.starts_with(*p)) else {
            // A lone '%' is ignored.
            continue;
        };
        rest = &rest[token.len()..];
        let year = dt.year();
        let piece = match *token {
            "yyyyyy" => format!("{}{:06}", if year < 0 { '-' } else { '+' }, year.abs()),
            "yyyy" if (0..=9999).contains(&year) => format!("{year:04}"),
            "yyyy" => format!("{}{:06}", if year < 0 { '-' } else { '+' }, year.abs()),
            "yy" => format!("{}{:02}", if year < 0 { "-" } else { "" }, year.abs() % 100),
            "y" => year.to_string(),
            "mmmm" => MONTHS[dt.month0() as usize].to_string(),
            "mmm" => MONTHS[dt.month0() as usize][..3].to_string(),
            "mm" => format!("{:02}", dt.month()),
            "m" => dt.month().to_string(),
            "wwww" => WEEKDAYS[dt.weekday().num_days_from_sunday() as usize].to_string(),
            "www" => WEEKDAYS[dt.weekday().num_days_from_sunday() as usize][..3].to_string(),
            "w" => dt.weekday().num_days_from_sunday().to_string(),
            "dd" => format!("{:02}", dt.day()),
            "d" => dt.day().to_string(),
            "hh" => format!("{:02}", dt.hour()),
            "h" => dt.hour().to_string(),
            "ii" => format!("{:02}", dt.minute()),
            "i" => dt.minute().to_string(),
            "ss" => format!("{:02}", dt.second()),
            "s" => dt.second().to_string(),
            "fff" => format!("{:03}", dt.nanosecond() / 1_000_000),
            "f" => (dt.nanosecond() / 1_000_000).to_string(),
            "xxx" => format!("{:03}", dt.ordinal()),
            "x" => dt.ordinal().to_string(),
            "kk" => format!("{:02}", dt.iso_week().week()),
            "k" => dt.iso_week().week().to_string(),
            "l" => u8::from(is_leap(year)).to_string(),
            "q" => ((dt.month() - 1) / 3 + 1).to_string(),
            "a" => days_in_month(year, dt.month()).to_string(),
            "t" => ms.to_string(),
            "z" => iso_from_millis(ms).unwrap_or_default(),
            "&" => String::new(),
            _ => "%".to_string(),
        };
        out.push_str(&piece);
    }
    out.push_str(rest);
    out
}

fn date_format(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(ms) = date_arg(ctx, args, 0) else {
        return Ok(Value::Null);
    };
    let Value::String(format) = arg(args, 1) else {
        return Ok(ctx.invalid_argument());
    };
    let Some(zone) = zone_arg(ctx, args, 2)? else {
        return Ok(Value::Null);
    };
    let local = localize(zone, ms);
    Ok(datetime(local).map_or(Value::Null, |dt| {
        Value::String(format_date(local, &dt, format))
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, invalid, ok, run};
    use super::*;
    use serde_json::json;

    fn warns_invalid_date(name: &str, args: Vec<Value>) {
        let (v, w) = run(name, args.clone());
        assert_eq!(v, Value::Null, "{name}({args:?})");
        assert_eq!(w, vec![1572], "{name}({args:?})");
    }

    #[test]
    fn parsing() {
        assert_eq!(
            parse_date_string("2014-05-07T14:19:09.522"),
            Some(1399472349522)
        );
        assert_eq!(
            parse_date_string("2014-05-07T14:19:09.522Z"),
            Some(1399472349522)
        );
        assert_eq!(
            parse_date_string("2014-05-07 14:19:09.522"),
            Some(1399472349522)
        );
        assert_eq!(
            parse_date_string("2014-05-07T15:19:09.522+01:00"),
            Some(1399472349522)
        );
        assert_eq!(
            parse_date_string("2014-05-07T07:49:09.522-06:30"),
            Some(1399472349522)
        );
        assert_eq!(parse_date_string("2014-05-07T07:49:09.522-0630"), None);
        assert_eq!(
            parse_date_string("  +2014-05-07T14:19:09.5221Z "),
            Some(1399472349522)
        );
        assert_eq!(parse_date_string("-2014"), None);
        assert_eq!(parse_date_string("002014"), parse_date_string("2014"));
        assert_eq!(parse_date_string("12014"), None);
        assert_eq!(parse_date_string("2014T5:3"), Some(1388552580000));
        assert_eq!(parse_date_string("2014-05-07 24:00"), None);
        assert_eq!(parse_date_string("2014-05-07t10:00"), None);
        assert_eq!(parse_date_string("1970-01-01"), Some(0));
        assert_eq!(parse_date_string("1970-01-01Z"), Some(0));
        assert_eq!(parse_date_string("1970"), Some(0));
        assert_eq!(parse_date_string("1970-02"), Some(31 * MS_DAY));
        assert_eq!(
            parse_date_string("2015-02-31"),
            parse_date_string("2015-03-03")
        );
        assert_eq!(parse_date_string("0000-01-01T00:00:00.000Z"), Some(MIN_MS));
        assert_eq!(parse_date_string("9999-12-31T23:59:59.999Z"), Some(MAX_MS));
        assert_eq!(parse_date_string("10000-01-01"), None);
        assert_eq!(parse_date_string("2015-13-01"), None);
        assert_eq!(
            parse_date_string("2015-01-01T5:00:00"),
            parse_date_string("2015-01-01T05:00:00")
        );
        assert_eq!(parse_date_string("foo"), None);
        assert_eq!(parse_date_string(""), None);
        assert_eq!(parse_date_string("2015-01-01T"), None);
    }

    #[test]
    fn conversion() {
        for date in [
            json!("2014-05-07T14:19:09.522"),
            json!("2014-05-07T14:19:09.522Z"),
            json!("2014-05-07 14:19:09.522"),
            json!(1399472349522u64),
        ] {
            assert_eq!(
                ok("DATE_TIMESTAMP", vec![date.clone()]),
                json!(1399472349522u64)
            );
            assert_eq!(
                ok("DATE_ISO8601", vec![date]),
                json!("2014-05-07T14:19:09.522Z")
            );
        }
        let parts = vec![
            json!(2014),
            json!(5),
            json!(7),
            json!(14),
            json!(19),
            json!(9),
            json!(522),
        ];
        assert_eq!(ok("DATE_TIMESTAMP", parts.clone()), json!(1399472349522u64));
        assert_eq!(ok("DATE_ISO8601", parts), json!("2014-05-07T14:19:09.522Z"));
        assert_eq!(
            ok("DATE_TIMESTAMP", vec![json!(2016), json!(2), json!(32)]),
            json!(1456963200000u64)
        );
        assert_eq!(
            ok(
                "DATE_TIMESTAMP",
                vec![json!(1970), json!(1), json!(1), json!(26)]
            ),
            json!(93600000)
        );
        warns_invalid_date("DATE_TIMESTAMP", vec![json!(2016), json!(12), json!(-1)]);
        warns_invalid_date("DATE_TIMESTAMP", vec![json!("foo")]);
        warns_invalid_date("DATE_ISO8601", vec![json!(253402300800000u64)]);
        let (v, w) = run("DATE_ISO8601", vec![json!(null)]);
        assert_eq!((v, w), (json!(null), vec![1542]));
        let (v, w) = run("DATE_ISO8601", vec![json!([1])]);
        assert_eq!((v, w), (json!(null), vec![1542]));
        assert_eq!(
            ok("DATE_TIMESTAMP", vec![json!("2014"), json!("5"), json!(7)]),
            json!(1399420800000u64)
        );
        warns_invalid_date("DATE_TIMESTAMP", vec![json!(10000), json!(1), json!(1)]);
        let now = ok("DATE_NOW", vec![]).as_i64().unwrap_or(0);
        assert!(now > 1_700_000_000_000);
    }

    #[test]
    fn components() {
        assert_eq!(ok("DATE_DAYOFWEEK", vec![json!("2020-08-29")]), json!(6));
        assert_eq!(ok("DATE_DAYOFWEEK", vec![json!(0)]), json!(4));
        assert_eq!(ok("DATE_YEAR", vec![json!("2020-08-29")]), json!(2020));
        assert_eq!(ok("DATE_YEAR", vec![json!(0)]), json!(1970));
        assert_eq!(ok("DATE_MONTH", vec![json!("2020-08-29")]), json!(8));
        assert_eq!(ok("DATE_DAY", vec![json!("2020-08-29")]), json!(29));
        assert_eq!(
            ok("DATE_HOUR", vec![json!("2020-08-29T16:30:05.123")]),
            json!(16)
        );
        assert_eq!(ok("DATE_HOUR", vec![json!(14400000)]), json!(4));
        assert_eq!(ok("DATE_HOUR", vec![json!(7200000)]), json!(2));
        assert_eq!(ok("DATE_MINUTE", vec![json!(2520000)]), json!(42));
        assert_eq!(
            ok("DATE_SECOND", vec![json!("2020-08-29T16:30:05.123")]),
            json!(5)
        );
        assert_eq!(ok("DATE_SECOND", vec![json!(1234567890)]), json!(7));
        assert_eq!(
            ok("DATE_MILLISECOND", vec![json!("2020-08-29T16:30:05.123")]),
            json!(123)
        );
        assert_eq!(ok("DATE_MILLISECOND", vec![json!(1234567890)]), json!(890));
        assert_eq!(ok("DATE_DAYOFYEAR", vec![json!("2020-08-29")]), json!(242));
        assert_eq!(ok("DATE_DAYOFYEAR", vec![json!(86400000)]), json!(2));
        assert_eq!(ok("DATE_ISOWEEK", vec![json!("2020-08-29")]), json!(35));
        assert_eq!(ok("DATE_ISOWEEK", vec![json!(1234567890)]), json!(3));
        assert_eq!(
            ok("DATE_ISOWEEKYEAR", vec![json!("2023-01-01")]),
            json!({"week": 52, "year": 2022})
        );
        assert_eq!(
            ok("DATE_ISOWEEKYEAR", vec![json!("2019-12-30")]),
            json!({"week": 1, "year": 2020})
        );
        assert_eq!(ok("DATE_LEAPYEAR", vec![json!("2020-01-01")]), json!(true));
        assert_eq!(ok("DATE_LEAPYEAR", vec![json!("2021-01-01")]), json!(false));
        assert_eq!(ok("DATE_QUARTER", vec![json!("2020-08-29")]), json!(3));
        assert_eq!(
            ok("DATE_DAYS_IN_MONTH", vec![json!("2020-08-01")]),
            json!(31)
        );
        assert_eq!(
            ok("DATE_DAYS_IN_MONTH", vec![json!("2020-09-01")]),
            json!(30)
        );
        assert_eq!(
            ok("DATE_DAYS_IN_MONTH", vec![json!("2020-02-01")]),
            json!(29)
        );
        assert_eq!(
            ok("DATE_DAYS_IN_MONTH", vec![json!("2021-02-01")]),
            json!(28)
        );
        assert_eq!(
            ok("DATE_DAYS_IN_MONTH", vec![json!(3045600000u64)]),
            json!(28)
        );
        assert_eq!(ok("DATE_YEAR", vec![json!(0), json!("UTC")]), json!(1970));
        assert_eq!(
            error("DATE_YEAR", vec![json!(0), json!("Mars/Olympus_Mons")]),
            10
        );
        warns_invalid_date("DATE_YEAR", vec![json!("x")]);
    }

    #[test]
    fn truncating_and_rounding() {
        assert_eq!(
            ok("DATE_TRUNC", vec![json!("2017-02-03"), json!("month")]),
            json!("2017-02-01T00:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_TRUNC",
                vec![json!("2017-02-03 04:05:06"), json!("hours")]
            ),
            json!("2017-02-03T04:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_TRUNC",
                vec![json!("2023-03-25 23:00:00"), json!("day")]
            ),
            json!("2023-03-25T00:00:00.000Z")
        );
        assert_eq!(
            ok("DATE_TRUNC", vec![json!("2018-10-26"), json!("y")]),
            json!("2018-01-01T00:00:00.000Z")
        );
        let (v, w) = run("DATE_TRUNC", vec![json!("2018-10-26"), json!("fortnight")]);
        assert_eq!((v, w), (json!(null), vec![1542]));
        assert_eq!(
            ok(
                "DATE_ROUND",
                vec![json!("2000-04-28T11:11:11.111Z"), json!(1), json!("day")]
            ),
            json!("2000-04-28T00:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_ROUND",
                vec![json!("2000-04-10T11:39:29Z"), json!(15), json!("minutes")]
            ),
            json!("2000-04-10T11:30:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_ROUND",
                vec![
                    json!("2019-12-04T21:17:52.583Z"),
                    json!(5),
                    json!("minutes")
                ]
            ),
            json!("2019-12-04T21:15:00.000Z")
        );
        for bad in [
            vec![json!(0), json!(0), json!("day")],
            vec![json!(0), json!(1), json!("month")],
            vec![json!(0), json!("1"), json!("day")],
            vec![json!(0), json!(1), json!("DAY")],
        ] {
            let (v, w) = run("DATE_ROUND", bad);
            assert_eq!((v, w), (json!(null), vec![1542]));
        }
        // Before the epoch, buckets are cut towards the epoch as in ArangoDB.
        assert_eq!(
            ok(
                "DATE_ROUND",
                vec![json!(-90_000_000), json!(1), json!("day")]
            ),
            json!("1969-12-31T00:00:00.000Z")
        );
    }

    #[test]
    fn adding_and_subtracting() {
        assert_eq!(
            ok(
                "DATE_ADD",
                vec![json!("2015-04-01"), json!(5), json!("years")]
            ),
            json!("2020-04-01T00:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_ADD",
                vec![json!("2015-04-01"), json!(61), json!("months")]
            ),
            json!("2020-05-01T00:00:00.000Z")
        );
        // The swapped (date, unit, amount) form of an old documentation example is rejected by
        // ArangoDB 3.12 (the third argument is then read as a timezone).
        invalid("DATE_ADD", vec![json!("2016-02"), json!("month"), json!(1)]);
        assert_eq!(
            ok(
                "DATE_ADD",
                vec![json!("2016-03-01"), json!(-1), json!("day")]
            ),
            json!("2016-02-29T00:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_ADD",
                vec![json!("2023-03-25T23:00:00.000Z"), json!(1), json!("day")]
            ),
            json!("2023-03-26T23:00:00.000Z")
        );
        assert_eq!(
            ok("DATE_ADD", vec![json!("2000-01-01"), json!("PT4H")]),
            json!("2000-01-01T04:00:00.000Z")
        );
        assert_eq!(
            ok("DATE_ADD", vec![json!("2000-01-01"), json!("PT30M44.4S")]),
            json!("2000-01-01T00:30:44.400Z")
        );
        assert_eq!(
            ok(
                "DATE_ADD",
                vec![json!("2000-01-01"), json!("P1Y2M3W4DT5H6M7.89S")]
            ),
            json!("2001-03-26T05:06:07.890Z")
        );
        assert_eq!(
            ok("DATE_ADD", vec![json!("2000-01-01"), json!("P5DT26H")]),
            json!("2000-01-07T02:00:00.000Z")
        );
        assert_eq!(
            ok("DATE_SUBTRACT", vec![json!("2000-01-05"), json!("P4D")]),
            json!("2000-01-01T00:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_SUBTRACT",
                vec![json!("2000-01-01T01:03:00Z"), json!("PT1H3M")]
            ),
            json!("2000-01-01T00:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_SUBTRACT",
                vec![json!("2016-03-01"), json!(1), json!("day")]
            ),
            json!("2016-02-29T00:00:00.000Z")
        );
        warns_invalid_date("DATE_ADD", vec![json!("2000-01-01"), json!("P")]);
        warns_invalid_date("DATE_ADD", vec![json!("2000-01-01"), json!("P1.5D")]);
        warns_invalid_date("DATE_ADD", vec![json!("2000-01-01"), json!("P1D2Y")]);
        assert_eq!(
            ok("DATE_ADD", vec![json!("2000-01-01"), json!("PT")]),
            json!("2000-01-01T00:00:00.000Z")
        );
        warns_invalid_date(
            "DATE_ADD",
            vec![json!("2000-01-01"), json!(1), json!("fortnight")],
        );
        warns_invalid_date(
            "DATE_ADD",
            vec![json!("9999-12-31"), json!(1), json!("day")],
        );
    }

    #[test]
    fn differences_and_comparisons() {
        assert_eq!(
            ok(
                "DATE_DIFF",
                vec![json!("2023-12-01"), json!("2024-04-01"), json!("days")]
            ),
            json!(122)
        );
        assert_eq!(
            ok(
                "DATE_DIFF",
                vec![
                    json!("2023-03-25T23:00:00.000Z"),
                    json!("2023-03-26T23:00:00.000Z"),
                    json!("hours")
                ]
            ),
            json!(24)
        );
        assert_eq!(
            ok(
                "DATE_DIFF",
                vec![json!(0), json!(90 * 60 * 1000), json!("h"), json!(true)]
            ),
            json!(1.5)
        );
        // Whole units are rounded, not truncated.
        assert_eq!(
            ok(
                "DATE_DIFF",
                vec![json!(90 * 60 * 1000), json!(0), json!("h")]
            ),
            json!(-2)
        );
        assert_eq!(
            ok(
                "DATE_DIFF",
                vec![json!(0), json!(80 * 60 * 1000), json!("h"), json!("UTC")]
            ),
            json!(1)
        );
        warns_invalid_date("DATE_DIFF", vec![json!(0), json!(0), json!("fortnight")]);
        assert_eq!(
            ok(
                "DATE_ADD",
                vec![json!("2000-01-01"), json!(1.5), json!("months")]
            ),
            json!("2000-02-16T00:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_ADD",
                vec![json!("2000-01-31"), json!(1), json!("month")]
            ),
            json!("2000-03-02T00:00:00.000Z")
        );
        assert_eq!(
            ok("DATE_TIMESTAMP", vec![json!("2014"), json!("5"), json!(7)]),
            json!(1399420800000u64)
        );
        warns_invalid_date("DATE_TIMESTAMP", vec![json!(10000), json!(1), json!(1)]);
        assert_eq!(
            ok(
                "DATE_COMPARE",
                vec![
                    json!("2001-01-01T15:30:45.678Z"),
                    json!("2001-01-01T08:08:08.008Z"),
                    json!("years"),
                    json!("days")
                ]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "DATE_COMPARE",
                vec![
                    json!("1985-04-04"),
                    json!("2020-04-04"),
                    json!("months"),
                    json!("days")
                ]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "DATE_COMPARE",
                vec![json!("1985-04-04"), json!("2020-04-04"), json!("years")]
            ),
            json!(false)
        );
        let (v, w) = run(
            "DATE_COMPARE",
            vec![json!(0), json!(0), json!("days"), json!("years")],
        );
        assert_eq!((v, w), (json!(null), vec![1542]));
        let (v, w) = run("DATE_COMPARE", vec![json!(0), json!(0), json!("nope")]);
        assert_eq!((v, w), (json!(null), vec![1542]));
    }

    #[test]
    fn formatting() {
        let f = |d: Value, fmt: &str| ok("DATE_FORMAT", vec![d, json!(fmt)]);
        assert_eq!(f(json!("1969"), "Summer of '%yy"), json!("Summer of '69"));
        assert_eq!(f(json!("2016"), "%%l = %l"), json!("%l = 1"));
        // The documentation's example claims "063"; March 1st of a leap year is day 61.
        assert_eq!(f(json!("2016-03-01"), "%xxx%"), json!("061"));
        assert_eq!(
            f(
                json!("2015-09-18T15:30:49.374Z"),
                "%dd.%mm.%yyyy %hh:%ii:%ss,%fff"
            ),
            json!("18.09.2015 15:30:49,374")
        );
        assert_eq!(f(json!("2015-09-18"), "%q/%yyyy"), json!("3/2015"));
        assert_eq!(f(json!("2015-09-08"), "%m%&month %d"), json!("9month 8"));
        assert_eq!(
            f(json!("2015-09-08"), "%mmmm %mmm %wwww %www %w"),
            json!("September Sep Tuesday Tue 2")
        );
        assert_eq!(
            f(json!("2023-12-31T23:00:00.000Z"), "%k %kk %a %y"),
            json!("52 52 31 2023")
        );
        assert_eq!(f(json!(0), "%t|%z"), json!("0|1970-01-01T00:00:00.000Z"));
        assert_eq!(f(json!("2016-01-01"), "%yyyyyy"), json!("+002016"));
        assert_eq!(f(json!("2016-01-01"), "%Y-%M-%D"), json!("2016-1-1"));
        warns_invalid_date("DATE_FORMAT", vec![json!("x"), json!("%y")]);
    }

    #[test]
    fn zones_and_strings() {
        assert_eq!(ok("DATE_TIMEZONE", vec![]), json!("Etc/UTC"));
        assert_eq!(
            ok("DATE_UTCTOLOCAL", vec![json!(0), json!("UTC")]),
            json!("1970-01-01T00:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_LOCALTOUTC",
                vec![json!("1970-01-01"), json!("Etc/UTC")]
            ),
            json!("1970-01-01T00:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_UTCTOLOCAL",
                vec![json!("2020-03-15T00:00:00.000Z"), json!("Europe/Berlin")]
            ),
            json!("2020-03-15T01:00:00.000")
        );
        assert_eq!(
            ok(
                "DATE_LOCALTOUTC",
                vec![json!("2020-03-15T01:00:00.000"), json!("Europe/Berlin")]
            ),
            json!("2020-03-15T00:00:00.000Z")
        );
        let detail = ok(
            "DATE_UTCTOLOCAL",
            vec![
                json!("2020-03-15T00:00:00.000Z"),
                json!("Europe/Berlin"),
                json!(true),
            ],
        );
        assert_eq!(detail["local"], json!("2020-03-15T01:00:00.000"));
        assert_eq!(
            detail["zoneInfo"],
            json!({"name": "CET", "begin": "2019-10-27T01:00:00.000Z", "end": "2020-03-29T01:00:00.000Z", "dst": false, "offset": 3600})
        );
        assert!(detail["tzdb"].is_string());
        assert_eq!(
            error("DATE_UTCTOLOCAL", vec![json!(0), json!("Nowhere/City")]),
            10
        );
        invalid("DATE_UTCTOLOCAL", vec![json!(0), json!(1)]);
        invalid("DATE_UTCTOLOCAL", vec![json!(0), json!("UTC"), json!(1)]);
        let zones = ok("DATE_TIMEZONES", vec![]);
        assert!(zones
            .as_array()
            .is_some_and(|z| z.len() > 300 && z.contains(&json!("Europe/Berlin"))));
    }

    #[test]
    fn timezones_shift_the_computation() {
        let berlin = json!("Europe/Berlin");
        assert_eq!(
            ok(
                "DATE_DAYOFWEEK",
                vec![json!("2023-03-25T23:00:00.000Z"), berlin.clone()]
            ),
            json!(0)
        );
        assert_eq!(
            ok(
                "DATE_YEAR",
                vec![json!("2023-12-31T23:00:00.000Z"), berlin.clone()]
            ),
            json!(2024)
        );
        assert_eq!(
            ok(
                "DATE_MINUTE",
                vec![json!("2023-12-31T23:00:00.000Z"), json!("Asia/Kathmandu")]
            ),
            json!(45)
        );
        assert_eq!(
            ok(
                "DATE_LEAPYEAR",
                vec![json!("2016-12-31T23:00:00.000Z"), berlin.clone()]
            ),
            json!(false)
        );
        assert_eq!(
            ok(
                "DATE_TRUNC",
                vec![json!("2023-03-25 23:00:00"), json!("day"), berlin.clone()]
            ),
            json!("2023-03-25T23:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_ROUND",
                vec![
                    json!("2023-03-25T23:55:55.555Z"),
                    json!(1),
                    json!("day"),
                    berlin.clone()
                ]
            ),
            json!("2023-03-25T23:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_ADD",
                vec![
                    json!("2023-03-25T23:00:00.000Z"),
                    json!(1),
                    json!("day"),
                    berlin.clone()
                ]
            ),
            json!("2023-03-26T22:00:00.000Z")
        );
        assert_eq!(
            ok(
                "DATE_DIFF",
                vec![
                    json!("2023-03-25T23:00:00.000Z"),
                    json!("2023-03-26T23:00:00.000Z"),
                    json!("hours"),
                    berlin.clone()
                ]
            ),
            json!(25)
        );
        assert_eq!(
            ok(
                "DATE_DIFF",
                vec![
                    json!("2024-01-01T00:00:00.000Z"),
                    json!("2024-01-01T00:00:00.000Z"),
                    json!("hours"),
                    json!(true),
                    json!("Asia/Kathmandu"),
                    json!("America/Los_Angeles")
                ]
            ),
            json!(-13.75)
        );
        assert_eq!(
            ok(
                "DATE_FORMAT",
                vec![
                    json!("2023-12-31T23:00:00.000Z"),
                    json!("%yyyy-%mm-%dd %hh"),
                    berlin.clone()
                ]
            ),
            json!("2024-01-01 00")
        );
        assert_eq!(
            ok(
                "DATE_COMPARE",
                vec![
                    json!("2023-12-31T23:30:00Z"),
                    json!("2024-01-01T00:10:00Z"),
                    json!("days"),
                    berlin
                ]
            ),
            json!(true)
        );
    }
}
