// Package benches holds Go benchmarks of the libraries MinIO uses
// (klauspost/reedsolomon, minio/highwayhash), so that Tessera's Rust
// kernels are measured side by side with them on the same machine.
package benches
