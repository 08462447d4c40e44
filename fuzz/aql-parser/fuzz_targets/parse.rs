//! Any byte string: the parser returns Ok or a 1501/1524 error, never panics or hangs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(query) = std::str::from_utf8(data) {
        if let Err(e) = quiver_aql::parser::parse(query) {
            assert!(matches!(e.number(), 1501 | 1524 | 9), "unexpected error {e}");
        }
    }
});
