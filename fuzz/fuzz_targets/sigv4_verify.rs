#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = s3_gateway::fuzzing::sigv4_verify(data);
});
