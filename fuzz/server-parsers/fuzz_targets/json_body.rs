#![no_main]
//! Fuzz target: `quiver_server::fuzz_entry::json_body`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quiver_server::fuzz_entry::json_body(data);
});
