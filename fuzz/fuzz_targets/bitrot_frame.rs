#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bitrot::fuzzing::frame_read(data));
