#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = s3_gateway::fuzzing::s3_documents(data);
});
