//! Key generators (`keyOptions`): traditional, autoincrement, uuid and padded, with ArangoDB's
//! validation errors (1232) and the `lastValue` each one reports.

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

/// The largest autoincrement step ArangoDB accepts.
pub const AUTOINCREMENT_MAX_INCREMENT: u64 = 1 << 16;

/// Which generator makes keys for documents inserted without `_key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyGeneratorType {
    /// Increasing decimal numbers (`"1"`, `"2"`, …); user-supplied numeric keys are tracked so
    /// generated keys never collide with them.
    Traditional,
    /// `offset`, then steps of `increment`, as decimal strings.
    Autoincrement,
    /// Random UUID v4 strings.
    Uuid,
    /// Increasing numbers as 16 lower-case hex digits, so that keys sort lexically.
    Padded,
}

impl KeyGeneratorType {
    /// ArangoDB's name of the generator (`keyOptions.type`).
    pub fn name(self) -> &'static str {
        match self {
            KeyGeneratorType::Traditional => "traditional",
            KeyGeneratorType::Autoincrement => "autoincrement",
            KeyGeneratorType::Uuid => "uuid",
            KeyGeneratorType::Padded => "padded",
        }
    }

    /// Parses ArangoDB's generator name; error 1232 for anything else.
    pub fn parse(name: &str) -> Result<KeyGeneratorType> {
        match name {
            "traditional" => Ok(KeyGeneratorType::Traditional),
            "autoincrement" => Ok(KeyGeneratorType::Autoincrement),
            "uuid" => Ok(KeyGeneratorType::Uuid),
            "padded" => Ok(KeyGeneratorType::Padded),
            _ => Err(invalid("invalid key generator type")),
        }
    }
}

fn invalid(message: &str) -> Error {
    Error::with_message(ErrorCode::InvalidKeyGenerator, message)
}

/// A collection's `keyOptions` (the configuration, not the running state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyOptions {
    /// The generator.
    pub generator: KeyGeneratorType,
    /// Whether documents may bring their own `_key` (otherwise error 1222).
    pub allow_user_keys: bool,
    /// Autoincrement step (1 for the other generators).
    pub increment: u64,
    /// Autoincrement start (0 for the other generators).
    pub offset: u64,
}

impl Default for KeyOptions {
    fn default() -> KeyOptions {
        KeyOptions {
            generator: KeyGeneratorType::Traditional,
            allow_user_keys: true,
            increment: 1,
            offset: 0,
        }
    }
}

impl KeyOptions {
    /// Parses `keyOptions` of a collection-create body. `null` or a missing value gives the
    /// defaults. Errors (all 1232 "invalid key generator"): an unknown `type`, `increment` or
    /// `offset` with a generator other than autoincrement, an increment of 0 or above 65536,
    /// non-numeric increment/offset.
    pub fn from_json(value: Option<&Value>) -> Result<KeyOptions> {
        let mut options = KeyOptions::default();
        let Some(value) = value else {
            return Ok(options);
        };
        let object = match value {
            Value::Null => return Ok(options),
            Value::Object(object) => object,
            _ => return Err(invalid("invalid key generator options")),
        };
        match object.get("type") {
            None | Some(Value::Null) => {}
            Some(Value::String(name)) => options.generator = KeyGeneratorType::parse(name)?,
            Some(_) => return Err(invalid("invalid key generator type")),
        }
        match object.get("allowUserKeys") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(allow)) => options.allow_user_keys = *allow,
            Some(_) => return Err(invalid("allowUserKeys must be a boolean")),
        }
        let number = |name: &str| -> Result<Option<u64>> {
            match object.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
                    (Some(v), _) => Ok(Some(v)),
                    (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => {
                        Ok(Some(f as u64))
                    }
                    _ => Err(invalid(&format!("{name} must be a non-negative integer"))),
                },
                Some(_) => Err(invalid(&format!("{name} must be a non-negative integer"))),
            }
        };
        let increment = number("increment")?;
        let offset = number("offset")?;
        if options.generator == KeyGeneratorType::Autoincrement {
            if let Some(increment) = increment {
                if increment == 0 {
                    return Err(invalid("increment value must be greater than zero"));
                }
                if increment >= AUTOINCREMENT_MAX_INCREMENT {
                    return Err(invalid("maximum increment value is 65535"));
                }
                options.increment = increment;
            }
            if let Some(offset) = offset {
                if offset == u64::MAX {
                    return Err(invalid("offset value is too high"));
                }
                options.offset = offset;
            }
        } else if increment.is_some() || offset.is_some() {
            // ArangoDB 3.12 rejects autoincrement-only attributes for the other generators
            // instead of silently ignoring them.
            return Err(invalid(
                "the 'increment' and 'offset' options are only supported by the autoincrement key generator",
            ));
        }
        Ok(options)
    }

    /// `keyOptions` as reported in collection properties.
    pub fn to_json(&self, last_value: u64) -> Value {
        let mut map = Map::new();
        map.insert("type".into(), self.generator.name().into());
        map.insert("allowUserKeys".into(), self.allow_user_keys.into());
        if self.generator == KeyGeneratorType::Autoincrement {
            map.insert("increment".into(), self.increment.into());
            map.insert("offset".into(), self.offset.into());
        }
        if self.generator != KeyGeneratorType::Uuid {
            map.insert("lastValue".into(), last_value.into());
        }
        Value::Object(map)
    }

    /// The configuration as persisted in the collection meta (no running state).
    pub(crate) fn to_meta(&self) -> Value {
        json!({
            "type": self.generator.name(),
            "allowUserKeys": self.allow_user_keys,
            "increment": self.increment,
            "offset": self.offset,
        })
    }

    pub(crate) fn from_meta(value: Option<&Value>) -> KeyOptions {
        let mut options = KeyOptions::default();
        if let Some(Value::Object(object)) = value {
            if let Some(generator) = object
                .get("type")
                .and_then(Value::as_str)
                .and_then(|name| KeyGeneratorType::parse(name).ok())
            {
                options.generator = generator;
            }
            if let Some(allow) = object.get("allowUserKeys").and_then(Value::as_bool) {
                options.allow_user_keys = allow;
            }
            if let Some(increment) = object.get("increment").and_then(Value::as_u64) {
                options.increment = increment.max(1);
            }
            if let Some(offset) = object.get("offset").and_then(Value::as_u64) {
                options.offset = offset;
            }
        }
        options
    }
}

/// How many generated values are reserved (persisted ahead) at a time: a restart skips at most
/// this many values (times the increment), and the catalog is written once per block instead
/// of once per insert.
pub(crate) const RESERVATION_BLOCK: u64 = 65_536;

/// The running state of a numeric generator: the last value handed out or seen, and the value
/// up to which keys may be handed out because the catalog durably holds a reservation at
/// least that high. After a restart the generator continues from the durable reservation, so
/// keys keep increasing without scanning the collection.
#[derive(Debug)]
pub(crate) struct KeyGenState {
    pub options: KeyOptions,
    pub last: u64,
    pub reserved: u64,
    /// A background refill of the reservation is under way.
    pub refill_pending: bool,
}

/// What the caller must do after generating or tracking a key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reservation {
    /// Nothing.
    Unchanged,
    /// Persist a reservation of at least this value before using the key (the key lies
    /// beyond what is durably reserved).
    Required(u64),
    /// The reservation runs low: raise it to this value in the background.
    Refill(u64),
}

impl KeyGenState {
    /// `last` is the last value handed out, `reserved` the durable reservation.
    pub fn new(options: KeyOptions, last: u64, reserved: u64) -> KeyGenState {
        KeyGenState {
            options,
            last,
            reserved,
            refill_pending: false,
        }
    }

    fn block(&self) -> u64 {
        RESERVATION_BLOCK.saturating_mul(self.options.increment.max(1))
    }

    /// The reservation to request at creation (so the first inserts need no catalog write).
    pub fn initial_reservation(options: &KeyOptions) -> u64 {
        RESERVATION_BLOCK
            .saturating_mul(options.increment.max(1))
            .saturating_add(options.offset)
    }

    fn reserve_for(&mut self, value: u64) -> Reservation {
        let block = self.block();
        if value > self.reserved {
            return Reservation::Required(value.saturating_add(block));
        }
        if !self.refill_pending && value.saturating_add(block / 2) > self.reserved {
            self.refill_pending = true;
            return Reservation::Refill(self.reserved.saturating_add(block));
        }
        Reservation::Unchanged
    }

    /// Records that the catalog now durably holds a reservation of `reserved`.
    pub fn reserved_up_to(&mut self, reserved: u64) {
        self.reserved = self.reserved.max(reserved);
    }

    fn numeric(&self) -> bool {
        self.options.generator != KeyGeneratorType::Uuid
    }

    fn next_value(&self) -> Result<u64> {
        let out_of_keys = || Error::new(ErrorCode::OutOfKeys);
        match self.options.generator {
            KeyGeneratorType::Autoincrement => {
                let (offset, increment) = (self.options.offset, self.options.increment);
                if self.last < offset {
                    Ok(offset)
                } else {
                    let step = increment - ((self.last - offset) % increment);
                    self.last.checked_add(step).ok_or_else(out_of_keys)
                }
            }
            _ => self.last.checked_add(1).ok_or_else(out_of_keys),
        }
    }

    /// A new key; error 1225 when the numeric space is exhausted.
    pub fn generate(&mut self) -> Result<(String, Reservation)> {
        if !self.numeric() {
            return Ok((
                uuid::Uuid::new_v4().hyphenated().to_string(),
                Reservation::Unchanged,
            ));
        }
        let value = self.next_value()?;
        self.last = value;
        let reservation = self.reserve_for(value);
        let key = match self.options.generator {
            KeyGeneratorType::Padded => format!("{value:016x}"),
            _ => value.to_string(),
        };
        Ok((key, reservation))
    }

    /// Raises the last value to `value` (a restored collection's `lastValue`), so that
    /// generated keys continue where the dumped collection stopped; a lower value changes
    /// nothing.
    pub fn raise_last(&mut self, value: u64) -> Reservation {
        if !self.numeric() || value <= self.last {
            return Reservation::Unchanged;
        }
        self.last = value;
        self.reserve_for(value)
    }

    /// Observes a user-supplied key so that later generated keys stay above it (ArangoDB's
    /// `track`): decimal keys for traditional/autoincrement, 16-hex-digit keys for padded.
    pub fn track(&mut self, key: &str) -> Reservation {
        let value = match self.options.generator {
            KeyGeneratorType::Uuid => None,
            KeyGeneratorType::Padded => {
                if key.len() == 16 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                    u64::from_str_radix(key, 16).ok()
                } else {
                    None
                }
            }
            _ => {
                if !key.is_empty() && key.len() <= 20 && key.bytes().all(|b| b.is_ascii_digit()) {
                    key.parse::<u64>().ok()
                } else {
                    None
                }
            }
        };
        match value {
            Some(value) if value > self.last => {
                self.last = value;
                self.reserve_for(value)
            }
            _ => Reservation::Unchanged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raise_last_continues_after_the_restored_value() {
        let options = KeyOptions::from_json(Some(&serde_json::json!({
            "type": "autoincrement", "offset": 5, "increment": 10
        })))
        .unwrap();
        let mut gen = KeyGenState::new(options, 0, u64::MAX);
        assert_eq!(gen.raise_last(35), Reservation::Unchanged);
        assert_eq!(gen.generate().unwrap().0, "45");
        assert_eq!(gen.raise_last(20), Reservation::Unchanged);
        assert_eq!(gen.generate().unwrap().0, "55");
        let mut uuid = KeyGenState::new(
            KeyOptions::from_json(Some(&serde_json::json!({"type": "uuid"}))).unwrap(),
            0,
            0,
        );
        assert_eq!(uuid.raise_last(99), Reservation::Unchanged);
        assert_eq!(uuid.last, 0);
    }

    fn state(json: Value) -> KeyGenState {
        KeyGenState::new(KeyOptions::from_json(Some(&json)).unwrap(), 0, u64::MAX)
    }

    #[test]
    fn traditional_keys_increase_and_track_user_keys() {
        let mut gen = state(json!({}));
        assert_eq!(gen.generate().unwrap().0, "1");
        assert_eq!(gen.generate().unwrap().0, "2");
        assert_eq!(gen.track("100"), Reservation::Unchanged);
        assert_eq!(gen.generate().unwrap().0, "101");
        assert_eq!(gen.track("abc"), Reservation::Unchanged);
        assert_eq!(gen.track("50"), Reservation::Unchanged);
        assert_eq!(gen.generate().unwrap().0, "102");
    }

    #[test]
    fn reservations_are_required_refilled_and_resumed_after_restart() {
        let options = KeyOptions::default();
        let initial = KeyGenState::initial_reservation(&options);
        let mut gen = KeyGenState::new(options.clone(), 0, initial);
        assert_eq!(
            gen.generate().unwrap(),
            ("1".to_string(), Reservation::Unchanged)
        );
        gen.last = initial - RESERVATION_BLOCK / 2;
        assert_eq!(
            gen.generate().unwrap().1,
            Reservation::Refill(initial + RESERVATION_BLOCK)
        );
        assert_eq!(
            gen.generate().unwrap().1,
            Reservation::Unchanged,
            "one refill at a time"
        );
        gen.last = initial;
        let (key, reservation) = gen.generate().unwrap();
        assert_eq!(
            reservation,
            Reservation::Required(initial + 1 + RESERVATION_BLOCK)
        );
        gen.reserved_up_to(initial + 1 + RESERVATION_BLOCK);
        // A restart resumes above the durable reservation, so keys keep increasing.
        let mut restarted = KeyGenState::new(options, gen.reserved, gen.reserved);
        let (next, reservation) = restarted.generate().unwrap();
        assert!(next.parse::<u64>().unwrap() > key.parse::<u64>().unwrap());
        assert!(matches!(reservation, Reservation::Required(_)));
        assert_eq!(gen.track("1"), Reservation::Unchanged);
        assert!(matches!(
            gen.track(&u64::MAX.to_string()),
            Reservation::Required(_)
        ));
    }

    #[test]
    fn autoincrement_uses_offset_and_increment() {
        let mut gen = state(json!({"type": "autoincrement", "offset": 5, "increment": 3}));
        let keys: Vec<String> = (0..3).map(|_| gen.generate().unwrap().0).collect();
        assert_eq!(keys, ["5", "8", "11"]);
        gen.track("13");
        assert_eq!(gen.generate().unwrap().0, "14");
        let mut plain = state(json!({"type": "autoincrement"}));
        assert_eq!(plain.generate().unwrap().0, "1");
    }

    #[test]
    fn padded_keys_sort_lexically() {
        let mut gen = state(json!({"type": "padded"}));
        let a = gen.generate().unwrap().0;
        let b = gen.generate().unwrap().0;
        assert_eq!(a, "0000000000000001");
        assert!(a < b);
        gen.track("00000000000000ff");
        assert_eq!(gen.generate().unwrap().0, "0000000000000100");
    }

    #[test]
    fn uuid_keys_are_unique() {
        let mut gen = state(json!({"type": "uuid"}));
        let a = gen.generate().unwrap().0;
        let b = gen.generate().unwrap().0;
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert!(quiver_types::validate_key(&a).is_ok());
    }

    #[test]
    fn out_of_keys() {
        let mut gen = state(json!({}));
        gen.track(&u64::MAX.to_string());
        assert_eq!(gen.generate().unwrap_err().code, ErrorCode::OutOfKeys);
    }

    #[test]
    fn invalid_options_are_1232() {
        for bad in [
            json!({"type": "foo"}),
            json!({"type": 12}),
            json!({"type": "traditional", "increment": 2}),
            json!({"type": "padded", "offset": 2}),
            json!({"type": "autoincrement", "increment": 0}),
            json!({"type": "autoincrement", "increment": 70000}),
            json!({"type": "autoincrement", "offset": -1}),
            json!("traditional"),
        ] {
            assert_eq!(
                KeyOptions::from_json(Some(&bad)).unwrap_err().code,
                ErrorCode::InvalidKeyGenerator,
                "{bad}"
            );
        }
        let ok = KeyOptions::from_json(Some(
            &json!({"type": "autoincrement", "increment": 2, "offset": 10, "allowUserKeys": false}),
        ))
        .unwrap();
        assert_eq!(
            (ok.increment, ok.offset, ok.allow_user_keys),
            (2, 10, false)
        );
        assert_eq!(KeyOptions::from_meta(Some(&ok.to_meta())), ok);
    }

    #[test]
    fn reported_key_options() {
        let options =
            KeyOptions::from_json(Some(&json!({"type": "autoincrement", "increment": 2}))).unwrap();
        assert_eq!(
            options.to_json(7),
            json!({"type": "autoincrement", "allowUserKeys": true, "increment": 2, "offset": 0, "lastValue": 7})
        );
        let uuid = KeyOptions::from_json(Some(&json!({"type": "uuid"}))).unwrap();
        assert_eq!(
            uuid.to_json(0),
            json!({"type": "uuid", "allowUserKeys": true})
        );
    }
}
