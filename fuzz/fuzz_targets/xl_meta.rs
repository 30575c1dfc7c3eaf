#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| object::fuzzing::xl_meta(data));
