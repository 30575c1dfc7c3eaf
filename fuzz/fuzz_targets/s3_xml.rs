#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| s3_gateway::fuzzing::s3_xml(data));
