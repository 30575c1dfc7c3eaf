#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| drive::fuzzing::format_json(data));
