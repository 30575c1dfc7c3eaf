module tessera.invalid/benches

go 1.24

require (
	github.com/klauspost/cpuid/v2 v2.2.8 // indirect
	github.com/klauspost/reedsolomon v1.12.4 // indirect
	github.com/minio/highwayhash v1.0.3 // indirect
	golang.org/x/sys v0.24.0 // indirect
)
