//! DARE 2.0 sealing and opening (the data path of SSE-C / SSE-S3 /
//! SSE-KMS), per cipher suite, in bytes of plaintext per second; and one
//! madmin payload decryption (the admin API's key derivation and stream),
//! per algorithm, with a fresh and a reused Argon2id buffer.
//!
//! ```text
//! cargo bench -p tessera-benches --bench sse
//! ```

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sse::dare::{CipherSuite, Decryptor, Encryptor};

fn dare(c: &mut Criterion) {
    let plain: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 + 3) as u8).collect();
    let key = [0x42u8; 32];
    let mut g = c.benchmark_group("dare/1MiB");
    g.throughput(Throughput::Bytes(plain.len() as u64));
    for (name, suite) in [
        ("aes-256-gcm", CipherSuite::Aes256Gcm),
        ("chacha20-poly1305", CipherSuite::ChaCha20Poly1305),
    ] {
        g.bench_function(BenchmarkId::new("seal", name), |b| {
            b.iter(|| Encryptor::new(&key, [1; 12], suite).seal_all(&plain));
        });
        let sealed = Encryptor::new(&key, [1; 12], suite).seal_all(&plain);
        g.bench_function(BenchmarkId::new("open", name), |b| {
            b.iter(|| {
                let out = Decryptor::new(&key, 0).open_all(&sealed).expect("opens");
                assert_eq!(out.len(), plain.len());
            });
        });
    }
    g.finish();
}

fn madmin(c: &mut Criterion) {
    use sse::madmin::{Algorithm, Argon2Memory, decrypt, decrypt_with, encrypt};
    let password = b"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let mut g = c.benchmark_group("madmin/decrypt-100B");
    g.sample_size(10);
    let mut memory = Argon2Memory::new();
    for algorithm in Algorithm::ALL {
        let payload = encrypt(password, [1; 32], [2; 8], algorithm, &[7; 100]);
        let name = format!("{algorithm:?}");
        g.bench_function(BenchmarkId::new("fresh", &name), |b| {
            b.iter(|| decrypt(password, &payload).expect("decrypts"));
        });
        g.bench_function(BenchmarkId::new("reused", &name), |b| {
            b.iter(|| decrypt_with(&mut memory, password, &payload).expect("decrypts"));
        });
    }
    g.finish();
}

criterion_group!(benches, dare, madmin);
criterion_main!(benches);
