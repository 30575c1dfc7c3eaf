#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| s3_gateway::fuzzing::range_conditional(data));
